# Install rules and the CMake package, so that another project can find_package(ampbench) and
# link the harness libraries to audit its own kernels through the op interface (docs/embedding.md;
# the example in scripts/embed-example, built against an installed copy by the test
# embed_example_builds_against_the_install).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Exported as ampbench::<name>: ampbench::audit, ampbench::results, ... Each is built as
# ampbench_<name> with an ALIAS ampbench::<name>, which the tree links, as find_package users do.
set(ampbench_exported
  numeric files io metrics policy inputs backend_cpu fingerprint ops audit train profile results
  runtime reference_exact reference_mp)
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
# Headers of the exported libraries only: not the command line's, not the CUDA backend's, which is
# not exported (its headers include kernels/, which is not installed), and not the registry's CUDA
# side (harness/runtime/cuda.hpp, which names the CUDA backend's plan).
foreach(dir harness reference)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp"
    PATTERN test EXCLUDE PATTERN bench EXCLUDE PATTERN cli EXCLUDE
    REGEX "/harness/backends/cuda$" EXCLUDE REGEX "/harness/runtime/cuda\\.hpp$" EXCLUDE)
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
