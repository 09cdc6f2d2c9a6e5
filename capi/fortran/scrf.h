! scrf.h: the SCR 3.1 constants for Fortran programs that call ckpt's
! SCR-compatible API through libscrf (include 'scrf.h').
!
! Written so that fixed form and free form both accept it: statements
! start in column 7 and stay within column 72, and comments start with
! '!' in column 1, which both forms read as a comment.
      INTEGER SCR_SUCCESS
      INTEGER SCR_MAX_FILENAME
      INTEGER SCR_FLAG_NONE
      INTEGER SCR_FLAG_CHECKPOINT
      INTEGER SCR_FLAG_OUTPUT
      PARAMETER (SCR_SUCCESS = 0)
      PARAMETER (SCR_MAX_FILENAME = 1024)
      PARAMETER (SCR_FLAG_NONE = 0)
      PARAMETER (SCR_FLAG_CHECKPOINT = 1)
      PARAMETER (SCR_FLAG_OUTPUT = 2)
