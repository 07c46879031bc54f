# tests/mpi/extra.cmake -- `mpirun -np 1` and `-np 2` give the same bytes (sweep, reproduce,
# experiment), and a failing rank names its run. Only when attn was built with MPI (ATTN_MPI and
# Open MPI found) and mpirun is there; labels "mpi" and "slow": the sanitizer stage of
# scripts/test.sh leaves it out (it trains for minutes under ASan, and LeakSanitizer reports Open
# MPI's own allocations); run it there by hand with
#   ASAN_OPTIONS=detect_leaks=0 ctest -L mpi   (in build-asan).
if(ATTN_MPI AND MPI_C_FOUND AND MPIEXEC_EXECUTABLE)
  add_test(NAME mpi/same_bytes
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_same_bytes.sh $<TARGET_FILE:attn>)
  set_tests_properties(mpi/same_bytes PROPERTIES
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
    LABELS "mpi;slow"
    TIMEOUT 300)
endif()
# One training run over the ranks: the bytes of `attn train` for -np 1, 2, 3 x --threads 1, 2
# (labels "mpi;slow", as above: the release stage runs it, the sanitizer stage leaves it out).
if(ATTN_MPI AND MPI_C_FOUND AND MPIEXEC_EXECUTABLE)
  add_test(NAME mpi/train_bytes
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_train_bytes.sh $<TARGET_FILE:attn>)
  set_tests_properties(mpi/train_bytes PROPERTIES
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1" LABELS "mpi;slow" TIMEOUT 300)
endif()
# A rank that dies (SIGKILL) during `mpirun -np 2 attn train`: non-zero exit, rank 1 named, rank
# 0's word on the files, no temporary left, and the last checkpoint resumable (both families).
if(ATTN_MPI AND MPI_C_FOUND AND MPIEXEC_EXECUTABLE)
  add_test(NAME mpi/killed_rank
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_killed_rank.sh $<TARGET_FILE:attn>)
  set_tests_properties(mpi/killed_rank PROPERTIES
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1" LABELS "mpi;slow" TIMEOUT 180)
endif()
