# ctest case of the ONNX round trip through onnxruntime: `goopt superopt` imports MODEL (an ONNX
# file with its weights), rewrites it with RULES and exports the result as ONNX; compare_models.js
# then runs the original and the optimized model in onnxruntime on the same random inputs in
# [-1, 1] and checks max |a - b| / max |b| <= 1e-4 for every output, at graph optimization level
# "all" and again with onnxruntime's own rewrites disabled (so that they cannot hide an export
# that computes something else). Skipped, saying why, where node or onnxruntime-node is missing
# (./bootstrap.sh ort installs it; CI does).
# METHOD (optional) is superopt's --method (default: the program's own, the greedy search).
#   cmake -DPROGRAM=goopt -DMODEL=m.onnx -DRULES=rules.json -DOUT=dir -DORT_DIR=tools/ort [-DMETHOD=eqsat] -P round_trip.cmake
find_program(NODE node)
if(NOT NODE)
  message("skipped: node is not on PATH (the onnxruntime round trip runs in Node.js: ./bootstrap.sh ort)")
  return()
endif()
if(NOT EXISTS "${ORT_DIR}/node_modules/onnxruntime-node/package.json")
  message("skipped: onnxruntime-node is not installed in ${ORT_DIR} (./bootstrap.sh ort)")
  return()
endif()
get_filename_component(stem "${MODEL}" NAME_WE)
set(method_flags)
if(METHOD)
  set(method_flags --method "${METHOD}")
  string(APPEND stem "_${METHOD}")
endif()
set(optimized "${OUT}/${stem}_superopt.onnx")
file(REMOVE "${optimized}")
execute_process(COMMAND "${PROGRAM}" superopt --onnx "${MODEL}" --rules "${RULES}" ${method_flags} --out "${optimized}"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "goopt superopt failed (exit ${status}):\n${out}${err}")
endif()
message(STATUS "${out}")
foreach(level IN ITEMS all disabled)
  execute_process(COMMAND "${NODE}" "${ORT_DIR}/compare_models.js" "${MODEL}" "${optimized}" --seed 1
                          --tolerance 1e-4 --level ${level}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "onnxruntime (optimization level ${level}): ${stem}.onnx and ${optimized} differ "
                        "(exit ${status}):\n${out}${err}")
  endif()
  message(STATUS "onnxruntime, optimization level ${level}, original vs optimized:\n${out}")
endforeach()
