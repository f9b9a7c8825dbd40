# cmake -DAR=ar -DRANLIB=ranlib -DMRI=script.mri -DOUT=libkiln.a -P merge_archives.cmake
# Runs the ar MRI script (CREATE OUT.tmp, ADDLIB per archive, SAVE) and moves the result
# to OUT, so an interrupted merge never leaves a half-written libkiln.a behind.
file(REMOVE ${OUT}.tmp)
execute_process(COMMAND ${AR} -M INPUT_FILE ${MRI} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR err)
  message(FATAL_ERROR "${AR} -M < ${MRI} failed (${rc}): ${err}")
endif()
if(RANLIB)
  execute_process(COMMAND ${RANLIB} ${OUT}.tmp RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${RANLIB} ${OUT}.tmp failed (${rc})")
  endif()
endif()
file(RENAME ${OUT}.tmp ${OUT})
