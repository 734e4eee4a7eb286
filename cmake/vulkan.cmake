# The Vulkan compute provider (src/providers/vulkan/), built where the Vulkan
# loader's headers and library (libvulkan-dev) and a GLSL compiler
# (glslangValidator, from glslang-tools) are found. Its shaders are compiled
# to SPIR-V here, at build time, and embedded in the library as arrays.
# Like the OpenVINO provider it is a library of its own, libonyx_vulkan.so
# beside libonyx.so, which the core loads at run time: the core never links
# libvulkan, and where the loader or a device is missing the provider is
# simply not listed.
# Not under the sanitizers: Mesa's software driver (lavapipe) keeps LLVM's JIT
# state past exit, which LeakSanitizer reports as leaks of every process that
# created a device.
set(ONYX_VULKAN AUTO CACHE STRING "Build the Vulkan provider (AUTO, ON, OFF)")
set_property(CACHE ONYX_VULKAN PROPERTY STRINGS AUTO ON OFF)
if(ONYX_SANITIZE AND NOT ONYX_VULKAN STREQUAL "OFF")
  message(STATUS "ONYX_SANITIZE: the Vulkan provider is not built")
elseif(NOT ONYX_VULKAN STREQUAL "OFF")
  find_package(Vulkan QUIET COMPONENTS glslangValidator)
  if(Vulkan_FOUND AND Vulkan_GLSLANG_VALIDATOR_EXECUTABLE)
    file(GLOB ONYX_VULKAN_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/providers/vulkan/shaders/*.comp)
    # What the shaders include.
    file(GLOB _onyx_shader_includes CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/providers/vulkan/shaders/*.glsl)
    set(_onyx_spirv_dir ${CMAKE_BINARY_DIR}/generated/vulkan)
    file(MAKE_DIRECTORY ${_onyx_spirv_dir})
    set(_onyx_spirv_headers "")
    set(_onyx_shader_arrays "")
    set(_onyx_shader_table "")
    foreach(_shader ${ONYX_VULKAN_SHADERS})
      get_filename_component(_name ${_shader} NAME_WE)
      set(_header ${_onyx_spirv_dir}/${_name}.spv.h)
      # -V: SPIR-V for Vulkan; --vn: a C array named after the shader.
      add_custom_command(OUTPUT ${_header}
        COMMAND ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE} -V --target-env vulkan1.1 --quiet
                --vn onyx_spirv_${_name} -o ${_header} ${_shader}
        DEPENDS ${_shader} ${_onyx_shader_includes}
        COMMENT "SPIR-V ${_name}.comp" VERBATIM)
      list(APPEND _onyx_spirv_headers ${_header})
      string(APPEND _onyx_shader_arrays "#include \"${_name}.spv.h\"\n")
      string(APPEND _onyx_shader_table "ONYX_SHADER(${_name})\n")
    endforeach()
    # Each shader's array, and ONYX_SHADER(name) for the table of them.
    file(CONFIGURE OUTPUT ${_onyx_spirv_dir}/shader_arrays.inc CONTENT "${_onyx_shader_arrays}")
    file(CONFIGURE OUTPUT ${_onyx_spirv_dir}/shader_table.inc CONTENT "${_onyx_shader_table}")
    file(GLOB ONYX_VULKAN_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/providers/vulkan/*.cc)
    add_library(onyx_vulkan SHARED ${ONYX_VULKAN_SOURCES} ${_onyx_spirv_headers})
    target_include_directories(onyx_vulkan PRIVATE ${_onyx_spirv_dir})
    target_link_libraries(onyx_vulkan PRIVATE onyx_core Vulkan::Vulkan)
    # Vulkan structs are made as {sType} with the rest zero, Vulkan's idiom.
    target_compile_options(onyx_vulkan PRIVATE -Wno-missing-field-initializers)
    set_target_properties(onyx_vulkan PROPERTIES BUILD_RPATH "$ORIGIN" INSTALL_RPATH "$ORIGIN")
    list(APPEND ONYX_PROVIDER_LIBRARY_FILES
         "${CMAKE_SHARED_LIBRARY_PREFIX}onyx_vulkan${CMAKE_SHARED_LIBRARY_SUFFIX}")
    if(NOT SKBUILD)
      include(GNUInstallDirs)
      install(TARGETS onyx_vulkan LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    endif()
    message(STATUS "Vulkan ${Vulkan_VERSION} and glslangValidator found: building the Vulkan provider")
  elseif(ONYX_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "ONYX_VULKAN=ON, but libvulkan-dev or glslangValidator (glslang-tools) was not found")
  else()
    message(STATUS "Vulkan loader or glslangValidator not found: the Vulkan provider is not built")
  endif()
endif()
