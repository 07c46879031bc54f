# tests/serve/extra.cmake -- the end-to-end test of `attn serve`: a server on a free loopback
# port, every endpoint with good and bad requests, then headless Chromium (Debian `chromium`)
# drives the page: the §7 observations, a sentence's shading against the API's attention, the
# model view (every layer x head) and the head view (query-to-key lines) against it, a
# polarity-changing counterfactual and occlusion against /api/predict, a 43-word sentence
# without horizontal overflow, section 4 (the shuffle test against /api/predict with and
# without positions=zero, also in a 420-pixel window, the position table's pixels against
# /api/positions, and all of it for a sinusoidal Transformer trained here), unknown words with
# the words of their place's class as the server's unknown_word answer gives them, two sentences
# side by side against /api/explain, the figures page, a model with its own vocabulary, and the
# decoder page (/decoder.html: its shading against /api/generate, the cross-attention's model
# view (every layer x head) and head view (lines) against its cross_attention and alignment, a
# top-5 alternative, the compose panel, and a URL that reopens the view); the screenshots stay in
# the build dir (serve-e2e*.png; those of the explorer's views in a temporary directory it
# prints).
add_test(NAME serve/e2e
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/e2e.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights --screenshot ${CMAKE_BINARY_DIR}/serve-e2e.png)
set_tests_properties(serve/e2e PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS browser
  TIMEOUT 400) # about 50 s idle; 150 s and more on a busy 2-core machine

# A weights file with its own vocabulary over HTTP: a PyTorch LSTM with 37 words of its own
# (tools/export_classifier.py) beside the committed Transformer; the server's answers equal
# `attn explain` / `attn predict` on the file byte for byte, /api/vocab?model= per model, the
# task's test sets only for the task's vocabulary. Label "torch" (needs /usr/bin/python3's torch).
add_test(NAME serve/own_vocab
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/own_vocab.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights)
set_tests_properties(serve/own_vocab PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
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
                     TIMEOUT 90 RUN_SERIAL TRUE LABELS slow)

# A model over the shared-gradient limit on the wire (tests/serve/big_model_sockets.py): a
# 19 M-parameter Transformer made here, two workers; predicts allocate no gradient, 6 explains at
# a time take turns with one gradient buffer (byte-identical answers, attn explain's values), the
# peak resident set under 1.5x the parameter bytes. Resident sets mean nothing under ASan: nosan.
add_test(NAME serve/big_model_sockets
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/big_model_sockets.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(serve/big_model_sockets PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
                     TIMEOUT 120 LABELS nosan)

# The decoder endpoints on the wire (tests/serve/decoder_sockets.py, sockets.py's helpers): a
# seq2seq-transformer trained here for 2 epochs beside the committed classifiers; /api/generate's
# headers, alignment and top-5, a forced prefix, 16 half-closing clients with byte-identical
# answers, the 64 KiB limit, framing, strict JSON, a slow body cut off, SIGTERM under load.
add_test(NAME serve/decoder_sockets
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/decoder_sockets.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights)
set_tests_properties(serve/decoder_sockets PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1" TIMEOUT 180)

# Section 4's endpoints on the wire (tests/serve/positions_sockets.py, sockets.py's helpers):
# GET /api/positions against the weights file's pos_embedding, and /api/predict?positions=zero
# -- the Transformer with its position vectors zeroed gives a sentence and its shuffles one
# probability, the trained one and the RNNs do not; then a Transformer trained here with
# --pos sinusoidal (its table against Python's sin/cos, bit for bit; positions=zero) and one with
# --pos rope (404 no_position_table).
add_test(NAME serve/positions_sockets
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/positions_sockets.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights)
set_tests_properties(serve/positions_sockets PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1" TIMEOUT 60)

# The unknown-word answer on the wire (tests/serve/unknown_sockets.py, sockets.py's helpers):
# /api/explain, /api/predict and /api/generate name the nearest word by spelling and the words
# of the class the grammar puts at the word's place (every word of /api/vocab's category,
# nearest first), every unknown word of the sentence, and attn explain's own message.
add_test(NAME serve/unknown_sockets
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/serve/unknown_sockets.py --attn $<TARGET_FILE:attn>
                 --weights ${CMAKE_SOURCE_DIR}/weights)
set_tests_properties(serve/unknown_sockets PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1" TIMEOUT 60)
