# Writes the build-info header with the current git revision. Run at every build (the revision
# changes without a reconfigure); the file is rewritten only when its content changes, so nothing
# recompiles needlessly. Inputs: SOURCE_DIR, INPUT, OUTPUT and the variables INPUT refers to.
set(AMPBENCH_GIT_REVISION unknown)
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE rev
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND rev)
    set(AMPBENCH_GIT_REVISION ${rev})
  endif()
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)
