# The nightly gate (CTest label nightly): runs suites/nightly.toml on the CPU backend and compares
# the result with the checked-in baseline reports/baselines/nightly-cpu.json. Fails when a case
# fails its budgets or the comparison finds a regression, a new failure or a missing case.
# Arguments: -DAMPBENCH= -DSOURCE_DIR= -DWORK_DIR=
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${AMPBENCH} run ${SOURCE_DIR}/suites/nightly.toml --out ${WORK_DIR}
                RESULT_VARIABLE run_status)
execute_process(COMMAND ${AMPBENCH} compare ${SOURCE_DIR}/reports/baselines/nightly-cpu.json
                        ${WORK_DIR}/result.json
                RESULT_VARIABLE compare_status)
if(NOT run_status EQUAL 0 OR NOT compare_status EQUAL 0)
  message(FATAL_ERROR "nightly gate: run exit ${run_status}, compare exit ${compare_status} "
                      "(the result: ${WORK_DIR}/result.json)")
endif()
