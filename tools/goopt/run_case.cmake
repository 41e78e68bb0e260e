# ctest cases of the goopt program: runs PROGRAM with ARGS ("@@"-separated) and checks its exit
# status (STATUS), that its output matches EXPECTED (stdout on success, stderr on failure), and that
# a failure says so in exactly one line on stderr.
# RULES, when given, is the rule library the program finds (GOOPT_RULES_FILE in its environment).
#   cmake -DPROGRAM=... -DSTATUS=N -DEXPECTED=regex -DARGS=a@@b@@c [-DRULES=file] -P run_case.cmake
if(DEFINED RULES)
  set(ENV{GOOPT_RULES_FILE} "${RULES}")
endif()
string(REPLACE "@@" ";" args "${ARGS}")
execute_process(COMMAND "${PROGRAM}" ${args} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL STATUS)
  message(FATAL_ERROR "exit status ${status}, expected ${STATUS}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(STATUS EQUAL 0)
  set(text "${out}")
else()
  set(text "${err}")
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines lines)
  if(NOT lines EQUAL 1)
    message(FATAL_ERROR "stderr has ${lines} lines, expected one:\n${err}")
  endif()
endif()
if(NOT text MATCHES "${EXPECTED}")
  message(FATAL_ERROR "output does not match '${EXPECTED}':\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "ok: exit ${status}")
