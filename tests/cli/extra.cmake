# tests/cli/extra.cmake -- docs/own-data.md live: your own data -> attn train --vocab-from-data
# -> PyTorch (logits bit-identical) -> back to attn (the same predictions, byte for byte).
# Needs /usr/bin/python3 with torch. Label "torch".
add_test(NAME cli/own_data_torch
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/own_data_torch.sh $<TARGET_FILE:attn>
                 ${CMAKE_SOURCE_DIR})
set_tests_properties(cli/own_data_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)
# The s6 figures train seven small seq2seq models first: seconds in the release stage, minutes
# under the sanitizers, which leave out "slow" (cli/insight runs the s6 figures there once
# weights/ holds the seq2seq models).
set_tests_properties(cli/test_cli_figures_decoder PROPERTIES LABELS slow)

# "nosan": the release stage runs these, the sanitizer stage (scripts/test.sh) leaves them out.
# Each runs `attn` on library code that sanitized tests run too (every line of src/ outside
# src/cli/ they execute, checked with gcov: docs/testing.md), and costs 9-16 s of CPU under the
# sanitizers. The sanitized tests covering most of each one's library lines:
#   cli/test_cli_seq2seq (train, generate, eval, info, reproduce --task rewrite):
#     cli/test_cli_seq2seq_explain 98 %, cli/test_cli_compose 97 %, train/test_seq2seq_train 91 %;
#   cli/test_cli_small (help texts, did-you-mean, eval --table, figures --quick, lesson):
#     cli/test_cli_insight 94 %, serve/test_serve 67 %, cli/test_cli_vocab 58 %;
#   cli/test_cli_threads (the same bytes for 1-4 threads): cli/test_cli_train 85 %,
#     serve/test_serve 84 %, train/test_threads 75 % (the thread pool and the threaded paths).
set_tests_properties(cli/test_cli_seq2seq cli/test_cli_small cli/test_cli_threads PROPERTIES
                     LABELS nosan)

# The same bytes for every --threads N on the native kernels too (the default of train,
# predict, eval, explain, generate; the tests above run pinned, as the CLI harness passes on):
# the thread tests again with ATTN_KERNELS=native.
foreach(t test_cli_threads test_cli_train_seq2seq_threads test_cli_seq2seq_threads)
  get_test_property(cli/${t} ENVIRONMENT env)
  add_test(NAME cli/${t}_native COMMAND ${t})
  set_tests_properties(cli/${t}_native PROPERTIES
    ENVIRONMENT "${env};ATTN_KERNELS=native" LABELS "nosan;slow" TIMEOUT 600)
endforeach()
