# Install rules and the CMake package, so that another project can find_package(ampbench) and
# link the harness libraries to audit its own kernels through the op interface (docs/embedding.md;
# the example in scripts/embed-example, built against an installed copy by the test
# embed_example_builds_against_the_install).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Exported as ampbench::<name>: ampbench::audit, ampbench::results, ... Each is built as
# ampbench_<name> with an ALIAS ampbench::<name>, which the tree links, as find_package users do.
set(ampbench_exported
  numeric files io memory metrics policy inputs quant backend_cpu fingerprint ops audit train profile
  results runtime reference_exact reference_mp)
set(ampbench_export_targets ampbench_warnings)
foreach(name IN LISTS ampbench_exported)
  get_target_property(aliased ampbench::${name} ALIASED_TARGET)
  if(NOT aliased STREQUAL "ampbench_${name}")
    message(FATAL_ERROR "cmake/install.cmake exports ${name}: ampbench::${name} must be an ALIAS "
                        "of ampbench_${name} (add_library(ampbench::${name} ALIAS ampbench_${name}))")
  endif()
  set_target_properties(ampbench_${name} PROPERTIES EXPORT_NAME ${name})
  list(APPEND ampbench_export_targets ampbench_${name})
endforeach()
# The warnings target only reaches consumers as a link-only (empty) dependency of the static
# libraries; it carries no flags to them.
set_target_properties(ampbench_warnings PROPERTIES EXPORT_NAME warnings)

install(TARGETS ${ampbench_export_targets} EXPORT ampbenchTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(AMPBENCH_CLI)
  install(TARGETS ampbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Public headers only (docs/embedding.md): the headers of the exported libraries' modules, less
# the private ones. Not installed:
#  - the modules that are not exported: the command line (cli), the CUDA backend (backends/cuda,
#    whose headers include kernels/, not installed either) and training on it (train/cuda), the
#    Python module and the fuzz targets; nor any module's tests and benchmarks;
#  - private headers: every detail/ folder, and the headers below, each included by its own
#    module's sources alone (or by the unexported CUDA side), never by an installed header.
#    The test embed_example_builds_against_the_install fails when an installed header includes
#    one of them.
set(ampbench_private_headers
  harness/backends/cpu/rounders.hpp  # the CPU backend's shared rounders and row drivers
  harness/numeric/clones.hpp         # function multiversioning of the vectorised loops
  harness/ops/definition.hpp         # the op record the family files fill in
  harness/results/html_parts.hpp     # what the HTML report's pages share
  harness/results/svg.hpp            # the HTML report's charts
  harness/runtime/cuda.hpp           # the registry's CUDA side (names the CUDA backend's plan)
  harness/train/trainer_steps.hpp)   # the trainer's steps, for trainer.cpp and the CUDA backend
set(ampbench_private_regex "")
foreach(header IN LISTS ampbench_private_headers)
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${header})
    message(FATAL_ERROR "cmake/install.cmake lists the private header ${header}, which does not "
                        "exist: remove it from ampbench_private_headers")
  endif()
  string(REPLACE "." "\\." escaped "${header}")
  list(APPEND ampbench_private_regex REGEX "/${escaped}$" EXCLUDE)
endforeach()
foreach(dir harness reference)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp"
    PATTERN test EXCLUDE PATTERN bench EXCLUDE PATTERN detail EXCLUDE
    REGEX "/harness/(cli|python|fuzz|backends/cuda|train/cuda)$" EXCLUDE
    ${ampbench_private_regex})
endforeach()
install(DIRECTORY suites/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ampbench/suites)

set(ampbench_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ampbench)
install(EXPORT ampbenchTargets NAMESPACE ampbench:: DESTINATION ${ampbench_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ampbenchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ampbenchConfig.cmake INSTALL_DESTINATION ${ampbench_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ampbenchConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ampbenchConfig.cmake
              ${PROJECT_BINARY_DIR}/ampbenchConfigVersion.cmake
        DESTINATION ${ampbench_cmake_dir})
