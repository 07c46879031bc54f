# tests/serve/extra.cmake -- the end-to-end test of `attn serve`: a server on a free loopback
# port, every endpoint with good and bad requests, then headless Chromium (Debian `chromium`)
# loads the page, types a sentence and the test compares each word's shading in the DOM with
# the API's attention values; the screenshot stays in the build dir (serve-e2e.png).
add_test(NAME serve/e2e
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/e2e.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights --screenshot ${CMAKE_BINARY_DIR}/serve-e2e.png)
set_tests_properties(serve/e2e PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS browser
  TIMEOUT 120)

# Socket-level checks (tests/serve/sockets.py): slow headers and body cut off, the per-address
# limit, half-closing clients, SIGTERM under load, the Host header, framing, duplicate JSON keys.
add_test(NAME serve/sockets
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/sockets.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights)
set_tests_properties(serve/sockets PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1" TIMEOUT 90)

# Debian's slowhttptest (slow headers, slow body; 300 connections, 8 s each) while a normal
# client must be answered within 1 s throughout (tests/serve/slowhttp.py).
# (scripts/install-deps.sh --test installs it; without it the test fails, saying so)
add_test(NAME serve/slowhttptest
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/slowhttp.py
                 --attn $<TARGET_FILE:attn> --weights ${CMAKE_SOURCE_DIR}/weights)
set_tests_properties(serve/slowhttptest PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
                     TIMEOUT 90 RUN_SERIAL TRUE)
