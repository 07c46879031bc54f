# bench/summarize.py's "Check: ... PASS|MISS" lines on made-up bench/peers.sh tables: PASS
# where the targets hold, MISS naming the row where one does not (no timings are measured).
add_test(NAME bench/summarize_checks
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/summarize_checks.py ${CMAKE_SOURCE_DIR})
set_tests_properties(bench/summarize_checks PROPERTIES LABELS nosan)
