# The embedding test: installs this build into a fresh prefix, configures and builds
# scripts/embed-example against it with find_package(ampbench), and runs the example, which exits
# 0 only when the audit tells its good kernel from its bad one.
# Arguments: -DBUILD_DIR= -DSOURCE_DIR= -DWORK_DIR= -DGENERATOR= -DFLAGS= (compile and link flags
# the example needs: the sanitizers of a sanitized build)
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}")
  endif()
  message("${out}")
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# Every installed header includes only installed headers (or system ones).
file(GLOB_RECURSE installed RELATIVE ${WORK_DIR}/prefix/include ${WORK_DIR}/prefix/include/*.hpp)
foreach(header IN LISTS installed)
  file(STRINGS ${WORK_DIR}/prefix/include/${header} includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(NOT EXISTS ${WORK_DIR}/prefix/include/${included})
      message(FATAL_ERROR "installed ${header} includes ${included}, which is not installed")
    endif()
  endforeach()
endforeach()
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/scripts/embed-example -B ${WORK_DIR}/build -G ${GENERATOR}
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     "-DCMAKE_CXX_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}")
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/audit_my_softmax)
# --backend through the installed backend registry (ampbench::runtime): all runs the CPU alone.
step(${WORK_DIR}/build/audit_my_softmax --backend all)
