# ctest "package_consumer": install goopt's build tree into a private prefix, then configure,
# build and run tests/package against that prefix. Any failing step fails the test.
# Run as: cmake -DGOOPT_BUILD_DIR=... -DPREFIX=... -DCONSUMER_SOURCE_DIR=... -DCONSUMER_BINARY_DIR=...
#               [-DCONFIG=...] [-DGENERATOR=...] [-DCXX_COMPILER=...] [-DCXX_COMPILER_LAUNCHER=...]
#               -P run_consumer.cmake
foreach(var IN ITEMS GOOPT_BUILD_DIR PREFIX CONSUMER_SOURCE_DIR CONSUMER_BINARY_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG Release)
endif()

function(run_step name)
  message(STATUS "package_consumer: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "package_consumer: step '${name}' failed (exit ${rc})")
  endif()
endfunction()

# Start from nothing, so a header removed from the tree cannot linger in the prefix.
file(REMOVE_RECURSE "${PREFIX}" "${CONSUMER_BINARY_DIR}")

run_step("install into ${PREFIX}"
  "${CMAKE_COMMAND}" --install "${GOOPT_BUILD_DIR}" --prefix "${PREFIX}" --config "${CONFIG}")

# The goopt program (built when CLI11 is there) is installed with the package and runs from there.
if(EXISTS "${GOOPT_BUILD_DIR}/bin/goopt")
  if(NOT EXISTS "${PREFIX}/bin/goopt")
    message(FATAL_ERROR "package_consumer: build/bin/goopt exists but was not installed as ${PREFIX}/bin/goopt")
  endif()
  run_step("installed bin/goopt models --only squeezenet" "${PREFIX}/bin/goopt" models --only squeezenet)
endif()

set(configure_args -S "${CONSUMER_SOURCE_DIR}" -B "${CONSUMER_BINARY_DIR}"
    "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DCMAKE_BUILD_TYPE=${CONFIG}")
if(GENERATOR)
  list(APPEND configure_args -G "${GENERATOR}")
endif()
if(CXX_COMPILER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(CXX_COMPILER_LAUNCHER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER}")
endif()
run_step("configure ${CONSUMER_SOURCE_DIR}" "${CMAKE_COMMAND}" ${configure_args})

# The package must have come from the prefix, not from the build tree or the system.
file(STRINGS "${CONSUMER_BINARY_DIR}/CMakeCache.txt" goopt_dir_line REGEX "^goopt_DIR:")
string(REGEX REPLACE "^goopt_DIR:[A-Z]+=" "" goopt_dir "${goopt_dir_line}")
file(REAL_PATH "${PREFIX}" real_prefix)
file(REAL_PATH "${goopt_dir}" real_goopt_dir)
string(FIND "${real_goopt_dir}/" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "package_consumer: goopt was found in '${goopt_dir}', not under '${PREFIX}'")
endif()

run_step("build" "${CMAKE_COMMAND}" --build "${CONSUMER_BINARY_DIR}" --config "${CONFIG}")

set(exe_suffix "")
if(CMAKE_HOST_WIN32)
  set(exe_suffix ".exe")
endif()
set(app "${CONSUMER_BINARY_DIR}/app${exe_suffix}")
if(NOT EXISTS "${app}")  # multi-config generators put it in a per-config folder
  set(app "${CONSUMER_BINARY_DIR}/${CONFIG}/app${exe_suffix}")
endif()
run_step("run ${app}" "${app}")

# The optional ONNX edge: built by tests/package when the installed package exports goopt::onnx.
get_filename_component(source_root "${CONSUMER_SOURCE_DIR}/../.." ABSOLUTE)
set(import_app "${CONSUMER_BINARY_DIR}/import_app${exe_suffix}")
if(EXISTS "${import_app}")
  run_step("run ${import_app}" "${import_app}" "${source_root}/tests/data/onnx/squeezenet1_1.onnx")
endif()

# The optional METIS edge: built by tests/package when goopt-config.cmake defines goopt::metis.
set(metis_app "${CONSUMER_BINARY_DIR}/metis_app${exe_suffix}")
if(EXISTS "${metis_app}")
  run_step("run ${metis_app}" "${metis_app}")
endif()

# The optional CBC edge: built by tests/package when goopt-config.cmake defines goopt::cbc.
set(cbc_app "${CONSUMER_BINARY_DIR}/cbc_app${exe_suffix}")
if(EXISTS "${cbc_app}")
  run_step("run ${cbc_app}" "${cbc_app}")
endif()
