# style/clang_format: every C source and header follows the checked-in .clang-format.
find_program(CLANG_FORMAT clang-format)
if(NOT CLANG_FORMAT)
  message(FATAL_ERROR "clang-format not found: apt-get install clang-format")
endif()
file(GLOB_RECURSE ATTN_STYLE_FILES CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/include/*.h ${CMAKE_SOURCE_DIR}/src/*.c ${CMAKE_SOURCE_DIR}/src/*.h
     ${CMAKE_SOURCE_DIR}/tests/*.c ${CMAKE_SOURCE_DIR}/tests/*.h
     ${CMAKE_SOURCE_DIR}/bench/*.c ${CMAKE_SOURCE_DIR}/bench/*.h)
add_test(NAME style/clang_format
         COMMAND ${CLANG_FORMAT} --dry-run -Werror ${ATTN_STYLE_FILES}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})

# style/layers: each folder library uses only the folder libraries it links (CMakeLists.txt,
# attn_layer), cJSON only in src/io, the BLAS only in src/kernels/sgemm.c, and no library code
# prints to stdout/stderr or exits. Checked on the symbols of the built archives.
set(ATTN_LAYER_ARGS "")
foreach(layer ${ATTN_LAYERS})
  get_target_property(deps ${layer} ATTN_LAYER_DEPS)
  if(NOT deps)
    set(deps "") # attn_util uses no other room
  endif()
  list(JOIN deps "," deps)
  string(APPEND ATTN_LAYER_ARGS "|${layer}=$<TARGET_FILE:${layer}>=${deps}")
endforeach()
add_test(NAME style/layers
         COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLAYERS=${ATTN_LAYER_ARGS}
                 -P ${CMAKE_CURRENT_LIST_DIR}/check_layers.cmake)

# clang_format runs no attn code: the sanitizer stage leaves it to the release stage ("nosan").
set_tests_properties(style/clang_format PROPERTIES LABELS nosan)

# style/doc_numbers: each number tests/style/doc_numbers.tsv lists is in its doc and in the
# committed output file it was copied from (a regenerated figure page fails stale docs).
add_test(NAME style/doc_numbers
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/doc_numbers.py ${CMAKE_SOURCE_DIR})
set_tests_properties(style/doc_numbers PROPERTIES LABELS nosan)

# style/json_printf: no JSON built by printf-style calls outside src/io (attn_json_writer writes
# it), but for the files tests/style/check_json_printf.sh still lists.
add_test(NAME style/json_printf
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_json_printf.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(style/json_printf PROPERTIES LABELS nosan)

# style/family_types: no file above src/models names a model family's own type (attn_model,
# attn_seq2seq, their configs, ...) unless tests/style/family_types.tsv lists it as a
# family-specific part, with why (tests/style/check_family_types.sh).
add_test(NAME style/family_types
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_family_types.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(style/family_types PROPERTIES LABELS nosan)

# style/bars: every file under src/ at most 500 lines, every function at most 80 (from the
# line that opens its body to the one that closes it), reported as file:line and name
# (tests/style/check_bars.py).
add_test(NAME style/bars COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_bars.py ${CMAKE_SOURCE_DIR})
set_tests_properties(style/bars PROPERTIES LABELS nosan)
# style/readme_table: README.md's performance table is bench/results/readme-table.md verbatim
# and its base model figures are bench/results/base.md's (bench/all.sh writes the results;
# bench/readme_table.py --write copies them in).
add_test(NAME style/readme_table
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/readme_table.py --check
                 ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/bench/results)
set_tests_properties(style/readme_table PROPERTIES LABELS nosan)
