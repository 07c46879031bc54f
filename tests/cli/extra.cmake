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
