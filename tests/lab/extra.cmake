# tests/lab/extra.cmake -- `attn experiment all --quick` as a user runs it is the slowest test of
# the suite (every experiment trains its models); it runs in the release stage, and the sanitizer
# stage, which leaves out the label "slow" (scripts/test.sh), skips it. The verdict rules
# themselves are tested on fixed numbers by lab/test_verdicts in every stage.
set_tests_properties(lab/test_experiments_cli PROPERTIES LABELS slow)
