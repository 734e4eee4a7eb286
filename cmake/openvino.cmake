# The OpenVINO provider (src/providers/openvino/), built where the `openvino`
# pip wheel is found: the wheel ships the headers, libopenvino.so, the ONNX
# frontend, the CPU plugin and a CMake config. It is a library of its own,
# libonyx_openvino.so beside libonyx.so, which the core loads at run time
# (src/providers/execution_provider.cc): the core never links libopenvino, so
# it loads and runs where the wheel is gone, and then the provider is simply
# not registered.
# Not under the sanitizers: OpenVINO's TBB dlopens libtbbbind with
# RTLD_DEEPBIND, which the sanitizer runtime refuses (it aborts the process),
# and every test that creates the provider would fail for that alone.
if(ONYX_SANITIZE AND NOT ONYX_OPENVINO STREQUAL "OFF")
  message(STATUS "ONYX_SANITIZE: the OpenVINO provider is not built (its TBB dlopens with RTLD_DEEPBIND)")
elseif(NOT ONYX_OPENVINO STREQUAL "OFF")
  find_package(Python3 COMPONENTS Interpreter QUIET)
  set(_onyx_openvino_cmake_dir "")
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import openvino, os; print(os.path.join(os.path.dirname(openvino.__file__), 'cmake'))"
      OUTPUT_VARIABLE _onyx_openvino_cmake_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(_onyx_openvino_cmake_dir AND EXISTS "${_onyx_openvino_cmake_dir}/OpenVINOConfig.cmake")
    find_package(OpenVINO CONFIG QUIET COMPONENTS Runtime ONNX PATHS "${_onyx_openvino_cmake_dir}" NO_DEFAULT_PATH)
  endif()
  if(OpenVINO_FOUND)
    file(GLOB ONYX_OPENVINO_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/providers/openvino/*.cc)
    add_library(onyx_openvino SHARED ${ONYX_OPENVINO_SOURCES})
    target_link_libraries(onyx_openvino PRIVATE onyx_core openvino::runtime openvino::frontend::onnx)
    get_filename_component(_onyx_openvino_libs "${_onyx_openvino_cmake_dir}/../libs" ABSOLUTE)
    # Found without LD_LIBRARY_PATH: the build tree points at the wheel's
    # libs, and at libonyx.so beside it.
    set_target_properties(onyx_openvino PROPERTIES BUILD_RPATH "$ORIGIN;${_onyx_openvino_libs}"
                                                   INSTALL_RPATH "$ORIGIN;${_onyx_openvino_libs}")
    # The core looks for the provider library beside itself by this name
    # (CMakeLists.txt hands the list to the loader).
    list(APPEND ONYX_PROVIDER_LIBRARY_FILES
         "${CMAKE_SHARED_LIBRARY_PREFIX}onyx_openvino${CMAKE_SHARED_LIBRARY_SUFFIX}")
    if(NOT SKBUILD)
      include(GNUInstallDirs)
      install(TARGETS onyx_openvino LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    endif()
    message(STATUS "OpenVINO ${OpenVINO_VERSION} found (${_onyx_openvino_cmake_dir}): building the OpenVINO provider")
  elseif(ONYX_OPENVINO STREQUAL "ON")
    message(FATAL_ERROR "ONYX_OPENVINO=ON, but the openvino wheel was not found (pip install openvino)")
  else()
    message(STATUS "openvino wheel not found: the OpenVINO provider is not built")
  endif()
endif()
