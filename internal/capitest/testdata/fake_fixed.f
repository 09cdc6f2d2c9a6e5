C     fake_fixed.f: scrf.h in a fixed-form program, against the fake
C     libscr (bindings_test.go): the constants, and one call each way.
      PROGRAM FIXED
      IMPLICIT NONE
      INCLUDE 'scrf.h'
      INTEGER IERR, FLAG
      CHARACTER*12 NAME
      PRINT '(5(I0,1X))', SCR_SUCCESS, SCR_MAX_FILENAME, SCR_FLAG_NONE,
     +  SCR_FLAG_CHECKPOINT, SCR_FLAG_OUTPUT
      CALL SCR_START_OUTPUT('fixed.1 ', SCR_FLAG_OUTPUT, IERR)
      CALL SCR_HAVE_RESTART(FLAG, NAME, IERR)
      PRINT '(A,I0,3A,I0)', 'flag ', FLAG, ' [', NAME, '] ', IERR
      END
