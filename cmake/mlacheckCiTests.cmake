# mlacheckCiTests.cmake: tests of what CI relies on beyond the code: docs/ci's gate script and YAML,
# and the ctest labels themselves. Included from the top-level CMakeLists.txt after every target exists.

# docs/ci: the gate script on smoke (good plugin 0, buggy plugin 1, reports collected either way) and
# the two CI files' YAML and shell (77 without python3-yaml)
add_test(NAME ci_gate
         COMMAND sh ${PROJECT_SOURCE_DIR}/harness/tests/ci_gate_test.sh $<TARGET_FILE:mlacheck>
                 $<TARGET_FILE:example_attn_only_plugin> $<TARGET_FILE:example_attn_only_buggy_plugin>
                 ${PROJECT_BINARY_DIR}/ci-gate)
set_tests_properties(ci_gate PROPERTIES LABELS "cli;plugin")
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_EXECUTABLE)
  add_test(NAME ci_docs_yaml
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/harness/tests/ci_docs_check.py
                   ${PROJECT_SOURCE_DIR}/docs/ci/github-actions.yml ${PROJECT_SOURCE_DIR}/docs/ci/gitlab-ci.yml)
  set_tests_properties(ci_docs_yaml PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
endif()

# every test carries one of the labels unit, cli, plugin, gpu, slow (cmake/check_labels.cmake)
add_test(NAME ctest_labels COMMAND ${CMAKE_COMMAND} -DCTEST=${CMAKE_CTEST_COMMAND} -DBUILD=${PROJECT_BINARY_DIR}
                                   -P ${PROJECT_SOURCE_DIR}/cmake/check_labels.cmake)
set_tests_properties(ctest_labels PROPERTIES LABELS unit)
