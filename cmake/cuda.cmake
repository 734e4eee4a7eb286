# The CUDA provider (src/providers/cuda/), built where CMake finds nvcc and the
# CUDA toolkit (cuBLASLt; cuDNN too where its headers and library are found,
# for Conv). Like the other optional providers it is a library of its own,
# libonyx_cuda.so beside libonyx.so, loaded by the core at run time; it links
# the CUDA runtime statically, so without a driver or a GPU it still loads and
# says why the provider is not offered.
# Code for sm_80 (A100) and sm_90 (H100), plus PTX for later GPUs; override
# with -DCMAKE_CUDA_ARCHITECTURES. Not under the sanitizers (the CUDA driver
# is not built for them and reports its own allocations as leaks).
set(ONYX_CUDA AUTO CACHE STRING "Build the CUDA provider (AUTO, ON, OFF)")
set_property(CACHE ONYX_CUDA PROPERTY STRINGS AUTO ON OFF)
if(ONYX_SANITIZE AND NOT ONYX_CUDA STREQUAL "OFF")
  message(STATUS "ONYX_SANITIZE: the CUDA provider is not built")
elseif(NOT ONYX_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublasLt)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
    endif()
    enable_language(CUDA)
    # The .cu files see only cuda_launch.h; C++17 is what CMake 3.22 knows for nvcc.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    if(ONYX_CCACHE AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
      # ccache caches nvcc's objects as it does GCC's (CMakeLists.txt).
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${ONYX_CCACHE} ${CCACHE_PROGRAM})
    endif()
    file(GLOB ONYX_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/providers/cuda/*.cc
         ${CMAKE_SOURCE_DIR}/src/providers/cuda/*.cu)
    find_path(ONYX_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATHS /usr/include)
    find_library(ONYX_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} PATHS /usr/lib/x86_64-linux-gnu)
    set(_onyx_cudnn_status "cuDNN not found: Conv stays on the CPU")
    add_library(onyx_cuda SHARED ${ONYX_CUDA_SOURCES})
    target_link_libraries(onyx_cuda PRIVATE onyx_core CUDA::cudart_static CUDA::cublasLt)
    if(ONYX_CUDNN_INCLUDE_DIR AND ONYX_CUDNN_LIBRARY)
      target_include_directories(onyx_cuda PRIVATE ${ONYX_CUDNN_INCLUDE_DIR})
      target_link_libraries(onyx_cuda PRIVATE ${ONYX_CUDNN_LIBRARY})
      target_compile_definitions(onyx_cuda PRIVATE ONYX_CUDA_WITH_CUDNN=1)
      set(_onyx_cudnn_status "cuDNN found (${ONYX_CUDNN_LIBRARY}): Conv through cuDNN")
    endif()
    # The host compiler's warnings for the .cu files too (the directory's
    # -Wall and friends are given to C and C++ only, which nvcc would refuse).
    target_compile_options(onyx_cuda PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
    if(ONYX_WERROR)
      target_compile_options(onyx_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
    endif()
    # cuBLASLt and cuDNN are found in the toolkit's folder where they were
    # found at build time.
    set_target_properties(onyx_cuda PROPERTIES BUILD_RPATH "$ORIGIN;${CUDAToolkit_LIBRARY_DIR}"
                                               INSTALL_RPATH "$ORIGIN;${CUDAToolkit_LIBRARY_DIR}")
    list(APPEND ONYX_PROVIDER_LIBRARY_FILES
         "${CMAKE_SHARED_LIBRARY_PREFIX}onyx_cuda${CMAKE_SHARED_LIBRARY_SUFFIX}")
    if(NOT SKBUILD)
      include(GNUInstallDirs)
      install(TARGETS onyx_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    endif()
    message(STATUS "CUDA ${CUDAToolkit_VERSION} found: building the CUDA provider for "
                   "${CMAKE_CUDA_ARCHITECTURES}; ${_onyx_cudnn_status}")
  elseif(ONYX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ONYX_CUDA=ON, but nvcc or the CUDA toolkit (with cuBLASLt) was not found")
  else()
    message(STATUS "nvcc or the CUDA toolkit not found: the CUDA provider is not built")
  endif()
endif()
