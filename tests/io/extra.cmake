# tests/io/extra.cmake -- the live PyTorch cross-check: fresh PyTorch weights -> JSON ->
# `attn predict` -> every logit bit-identical to PyTorch's batch-1 eval logit. Needs
# /usr/bin/python3 with torch (Debian python3-torch, installed by the README). Label "torch".
add_test(NAME io/crosscheck_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/crosscheck_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# A user's own PyTorch classifiers (rnn, lstm, gru, transformer) with a vocabulary of their own
# (200 random words): exported with tools/export_classifier.py, `attn predict` on the words and
# `attn predict --ids` on the ids both bit-identical to PyTorch. Label "torch".
add_test(NAME io/vocab_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/vocab_crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/vocab_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)
