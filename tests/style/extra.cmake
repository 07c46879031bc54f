# style/clang_format: every C source and header follows the checked-in .clang-format.
find_program(CLANG_FORMAT clang-format)
if(NOT CLANG_FORMAT)
  message(FATAL_ERROR "clang-format not found: apt-get install clang-format")
endif()
file(GLOB_RECURSE ATTN_STYLE_FILES CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/include/*.h ${CMAKE_SOURCE_DIR}/src/*.c ${CMAKE_SOURCE_DIR}/src/*.h
     ${CMAKE_SOURCE_DIR}/tests/*.c ${CMAKE_SOURCE_DIR}/tests/*.h
     ${CMAKE_SOURCE_DIR}/bench/*.c ${CMAKE_SOURCE_DIR}/bench/*.h)
add_test(NAME style/clang_format
         COMMAND ${CLANG_FORMAT} --dry-run -Werror ${ATTN_STYLE_FILES}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
