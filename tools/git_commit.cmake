# Writes OUT with the source tree's git commit (ORT_TRAIN_GIT_COMMIT), at build
# time, so `ort_train --version` names the commit it was built from. The file
# is rewritten only when the commit changes, so a rebuild recompiles nothing
# else. Run by the ort_train_git_commit target in CMakeLists.txt.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown (not built from a git checkout)")
endif()
set(text "#pragma once\n#define ORT_TRAIN_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
