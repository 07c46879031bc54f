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
# Each runs `attn` on library code that sanitized tests run too (line coverage of src/, checked
# with gcov: docs/testing.md), and costs 9-16 s of CPU under the sanitizers:
#   cli/test_cli_seq2seq (train, generate, eval, info, reproduce --task rewrite): the same library
#     code as models/test_seq2seq, train/test_seq2seq_train, explain/test_seq2seq_explain,
#     cli/test_cli_compose and cli/test_cli_seq2seq_rnn's GRU case;
#   cli/test_cli_small (help texts, did-you-mean, eval --table, figures --quick, lesson): the
#     library code of cli/test_cli_insight, cli/test_cli_consistency and lab/test_*;
#   cli/test_cli_threads (the same bytes for 1-4 threads): train/test_threads and
#     models/test_*_threads2 run the thread pool and the threaded paths.
set_tests_properties(cli/test_cli_seq2seq cli/test_cli_small cli/test_cli_threads PROPERTIES
                     LABELS nosan)
