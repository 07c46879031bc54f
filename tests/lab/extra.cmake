# tests/lab/extra.cmake -- `attn experiment all --quick` as a user runs it is the slowest test of
# the suite (every experiment trains its models); it runs in the release stage, and the sanitizer
# stage, which leaves out the label "slow" (scripts/test.sh), skips it. What the command adds
# (lab/test_experiments_cli), the experiments' numbers (lab/test_experiments) and their verdict
# rules on fixed numbers (lab/test_verdicts) are fast and run in every stage.
set_tests_properties(lab/test_experiments_quick PROPERTIES LABELS slow)
