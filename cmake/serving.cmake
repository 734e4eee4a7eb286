# `onyx serve` (serving/): the Open Inference Protocol over HTTP, built where
# Debian's cpp-httplib (libcpp-httplib-dev) and nlohmann-json
# (nlohmann-json3-dev) are found. Without them `onyx serve` says what to
# install. ONYX_SERVE: AUTO (default), ON (fail without them), OFF.
set(ONYX_SERVE AUTO CACHE STRING "Build `onyx serve` (AUTO, ON, OFF)")
set_property(CACHE ONYX_SERVE PROPERTY STRINGS AUTO ON OFF)
if(NOT ONYX_SERVE STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    # Debian's cpp-httplib is a compiled library: its .pc file carries the
    # feature defines (OpenSSL, zlib, brotli) its class layouts depend on.
    pkg_check_modules(ONYX_HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
  endif()
  find_package(nlohmann_json 3.10 QUIET)
  if(ONYX_HTTPLIB_FOUND AND nlohmann_json_FOUND)
    file(GLOB ONYX_SERVING_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/serving/*.cc)
    add_library(onyx_serving STATIC ${ONYX_SERVING_SOURCES})
    # The server sees onyx through its public C++ API (include/onyx/) only.
    target_include_directories(onyx_serving PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR})
    target_link_libraries(onyx_serving PUBLIC onyx_core PkgConfig::ONYX_HTTPLIB nlohmann_json::nlohmann_json)
    target_link_libraries(onyx_cli PRIVATE onyx_serving)
    # Only the two files that differ get the define, so the other tools' objects
    # are the same with and without the server (ccache shares them).
    set_source_files_properties(${CMAKE_SOURCE_DIR}/tools/serve.cc ${CMAKE_SOURCE_DIR}/tools/version.cc
                                PROPERTIES COMPILE_DEFINITIONS ONYX_SERVE)
    message(STATUS "onyx serve: built (cpp-httplib ${ONYX_HTTPLIB_VERSION}, nlohmann-json ${nlohmann_json_VERSION})")
  elseif(ONYX_SERVE STREQUAL "ON")
    message(FATAL_ERROR "ONYX_SERVE=ON needs cpp-httplib and nlohmann-json: apt-get install libcpp-httplib-dev nlohmann-json3-dev")
  else()
    message(STATUS "onyx serve: not built (apt-get install libcpp-httplib-dev nlohmann-json3-dev)")
  endif()
endif()
