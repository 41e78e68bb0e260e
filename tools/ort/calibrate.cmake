# ctest case of `goopt calibrate` on a real onnxruntime: measures GRAPH's op configurations into a
# fresh table (each one timed in onnxruntime by measure_ops.js), checks that a second calibrate of the
# same graph finds everything measured, and that `goopt superopt --cost-table` uses the table (every
# configuration of the original measured) and gives the same result twice, and that --calibrate-rounds
# on a table lacking some of the input's configurations measures those first, then what its search
# asked about. Skipped, saying why, where node or onnxruntime-node is missing (./bootstrap.sh ort
# installs it; CI does).
#   cmake -DPROGRAM=goopt -DGRAPH=g.json -DRULES=rules.json -DOUT=dir -DORT_DIR=tools/ort -P calibrate.cmake
find_program(NODE node)
if(NOT NODE)
  message("skipped: node is not on PATH (goopt calibrate measures in Node.js: ./bootstrap.sh ort)")
  return()
endif()
if(NOT EXISTS "${ORT_DIR}/node_modules/onnxruntime-node/package.json")
  message("skipped: onnxruntime-node is not installed in ${ORT_DIR} (./bootstrap.sh ort)")
  return()
endif()
set(table "${OUT}/calibrate_table.json")
file(REMOVE "${table}")
function(run_goopt result)
  execute_process(COMMAND "${PROGRAM}" ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "goopt ${ARGN} failed (exit ${status}):\n${out}${err}")
  endif()
  message(STATUS "goopt ${ARGN}:\n${out}")
  set(${result} "${out}" PARENT_SCOPE)
endfunction()
run_goopt(first calibrate --graph "${GRAPH}" --out "${table}" --repetitions 5 --warmup 1 --ort-dir "${ORT_DIR}")
if(NOT first MATCHES "measured ([1-9][0-9]*) configurations in")
  message(FATAL_ERROR "the first calibrate measured nothing")
endif()
if(NOT first MATCHES "([0-9]+) of ([0-9]+) op configurations measured" OR NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2)
  message(FATAL_ERROR "the first calibrate left op configurations of the graph unmeasured")
endif()
file(READ "${table}" text)
string(JSON version GET "${text}" version)
string(JSON threads GET "${text}" runtime threads)
string(JSON entries LENGTH "${text}" times)
if(NOT version EQUAL 2 OR NOT threads EQUAL 1 OR entries LESS 1)
  message(FATAL_ERROR "${table}: version ${version}, ${threads} threads, ${entries} times")
endif()
run_goopt(second calibrate --graph "${GRAPH}" --out "${table}" --repetitions 5 --ort-dir "${ORT_DIR}")
if(NOT second MATCHES "already measured\\), 0 models to time")
  message(FATAL_ERROR "the second calibrate of the same graph measured again")
endif()
foreach(k IN ITEMS 1 2)
  run_goopt(search${k} superopt --graph "${GRAPH}" --rules "${RULES}" --cost-table "${table}" --ort-dir "${ORT_DIR}"
            --out "${OUT}/calibrate_superopt_${k}.json")
  if(NOT search${k} MATCHES "before: ([0-9]+) of ([0-9]+) op configurations measured"
     OR NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2)
    message(FATAL_ERROR "superopt --cost-table did not find the original's configurations in the table")
  endif()
endforeach()
file(READ "${OUT}/calibrate_superopt_1.json" graph1)
file(READ "${OUT}/calibrate_superopt_2.json" graph2)
if(NOT graph1 STREQUAL graph2)
  message(FATAL_ERROR "two searches with the same table wrote different graphs")
endif()
# --calibrate-rounds on an existing table that lacks some of the input's configurations: the input's
# missing ones are measured before the first search (not only the result's), so that the search
# compares a measured input with a measured result. The table is the first one with every other
# single-op time taken out (its fused groups and the rest stay, so it is not a new table).
set(partial "${OUT}/calibrate_partial_table.json")
file(READ "${table}" text)
string(JSON entries LENGTH "${text}" times)
set(removed 0)
set(single 0)
math(EXPR last "${entries} - 1")
foreach(i RANGE ${last} 0 -1)
  string(JSON config GET "${text}" times ${i} config)
  if(NOT config MATCHES "^group{")
    math(EXPR single "${single} + 1")
    math(EXPR odd "${single} % 2")
    if(odd)
      string(JSON text REMOVE "${text}" times ${i})
      math(EXPR removed "${removed} + 1")
    endif()
  endif()
endforeach()
if(removed EQUAL 0 OR removed EQUAL entries)
  message(FATAL_ERROR "${table}: ${entries} times, ${single} of single ops: cannot make a partial table of it")
endif()
file(WRITE "${partial}" "${text}")
run_goopt(rounds superopt --graph "${GRAPH}" --rules "${RULES}" --cost-table "${partial}" --calibrate-rounds 1
          --ort-dir "${ORT_DIR}" --out "${OUT}/calibrate_superopt_rounds.json")
if(NOT rounds MATCHES "calibrated the input: ([0-9]+) op configurations measured" OR NOT CMAKE_MATCH_1 EQUAL removed)
  message(FATAL_ERROR "superopt --calibrate-rounds on a table lacking ${removed} of the input's configurations "
                      "did not measure them first")
endif()
if(NOT rounds MATCHES "before: ([0-9]+) of ([0-9]+) op configurations measured" OR NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2)
  message(FATAL_ERROR "superopt --calibrate-rounds left configurations of the input unmeasured")
endif()
# the round measures what the search asked about (its candidates' configurations), not only its result's
if(NOT rounds MATCHES "the search asked about ([0-9]+) more; measured ([0-9]+) in" OR CMAKE_MATCH_2 LESS CMAKE_MATCH_1
   OR CMAKE_MATCH_1 EQUAL 0)
  message(FATAL_ERROR "superopt --calibrate-rounds did not measure the configurations its search asked about")
endif()
# --measurer: the same measuring through the command line of a measurer (here measure_ops.js itself,
# as tools/gpu/torch_runtime.py would be on a GPU): its --environment names the table's environment,
# a fresh table is made in it, and superopt checks a table against the measurer, not onnxruntime-node
set(by_measurer "${OUT}/calibrate_measurer_table.json")
file(REMOVE "${by_measurer}")
set(measurer "${NODE} ${ORT_DIR}/measure_ops.js")
run_goopt(measured calibrate --graph "${GRAPH}" --out "${by_measurer}" --repetitions 3 --warmup 1 --no-groups
          --measurer "${measurer}")
if(NOT measured MATCHES "measured ([1-9][0-9]*) configurations in" OR NOT measured MATCHES "onnxruntime [0-9.]+, 1 thread")
  message(FATAL_ERROR "calibrate --measurer measured nothing, or not in onnxruntime's environment")
endif()
run_goopt(searched superopt --graph "${GRAPH}" --rules "${RULES}" --cost-table "${by_measurer}" --measurer "${measurer}"
          --out "${OUT}/calibrate_superopt_measurer.json")
if(NOT searched MATCHES "before: ([0-9]+) of ([0-9]+) op configurations measured" OR NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2
   OR searched MATCHES "warning")
  message(FATAL_ERROR "superopt --measurer did not use the measurer's table as its own")
endif()
