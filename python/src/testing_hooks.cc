// Test-only hooks of the `_onyx` extension: the simulated devices the test
// suites run every session through (pytest --providers ...) and their
// counters. They are not part of onyx's API, so they are the one place the
// extension reaches past the C API into the library.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "onyx/session.h"

namespace nb = nanobind;

void register_testing_hooks(nb::module_& m) {
  m.def("_register_testing_providers", &onyx::register_testing_providers);
  m.def("_test_device_counters", &onyx::testing_device_counters);
  m.def("_reset_test_device_counters", &onyx::reset_testing_device_counters);
}
