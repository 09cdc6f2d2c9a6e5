C     scr_f77.f: SCR's sequence from a fixed-form Fortran 77 program
C     (include 'scrf.h', libscrf), run by bindings_test.go under mpirun.
C
C     scr_f77 start:   no checkpoint on offer; writes checkpoints ckpt.1
C                      to ckpt.3 (rank_R.dat in each, NBYTES bytes that
C                      depend on the checkpoint and the rank), then the
C                      OUTPUT dataset f77out.1 (f77out/rank_R.txt).
C     scr_f77 restart: ckpt.3 is on offer; reads it back and checks every
C                      byte, and that nothing follows them.
C     Any difference ends the job with MPI_ABORT and a non-zero status.
      PROGRAM SCRF77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INCLUDE 'scrf.h'
      INTEGER NCKPT, NBYTES
      PARAMETER (NCKPT = 3, NBYTES = 5000)
      INTEGER IERR, RANK, NPROCS, FLAG, I
      CHARACTER*16 MODE
      CHARACTER*64 DNAME, FNAME
      CHARACTER*(SCR_MAX_FILENAME) PATH, CNAME
      CHARACTER*(NBYTES) DATA, BACK
      CHARACTER*1 EXTRA
      INTEGER IOS

      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)
      CALL GET_COMMAND_ARGUMENT(1, MODE)

      CALL SCR_INIT(IERR)
      IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'SCR_INIT failed')
      CALL SCR_HAVE_RESTART(FLAG, CNAME, IERR)
      IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'HAVE_RESTART')

      IF (MODE .EQ. 'start') THEN
        IF (FLAG .NE. 0) CALL FAIL(RANK, 'a checkpoint on first run')
        DO 10 I = 1, NCKPT
          WRITE (DNAME, '(A,I0)') 'ckpt.', I
          CALL SCR_START_OUTPUT(DNAME, SCR_FLAG_CHECKPOINT, IERR)
          IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'START_OUTPUT')
          WRITE (FNAME, '(2A,I0,A)') TRIM(DNAME), '/rank_', RANK,
     +      '.dat'
          CALL SCR_ROUTE_FILE(FNAME, PATH, IERR)
          IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'ROUTE_FILE')
          CALL FILL(DATA, NBYTES, I, RANK)
          OPEN (UNIT=11, FILE=PATH, ACCESS='STREAM',
     +      FORM='UNFORMATTED', STATUS='REPLACE', IOSTAT=IOS)
          IF (IOS .NE. 0) CALL FAIL(RANK, 'cannot create ' // PATH)
          WRITE (11) DATA
          CLOSE (11)
          CALL SCR_COMPLETE_OUTPUT(1, IERR)
          IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'COMPLETE_OUTPUT')
   10   CONTINUE

        CALL SCR_START_OUTPUT('f77out.1', SCR_FLAG_OUTPUT, IERR)
        IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'START_OUTPUT out')
        WRITE (FNAME, '(A,I0,A)') 'f77out/rank_', RANK, '.txt'
        CALL SCR_ROUTE_FILE(FNAME, PATH, IERR)
        IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'ROUTE_FILE out')
        OPEN (UNIT=12, FILE=PATH, STATUS='REPLACE', IOSTAT=IOS)
        IF (IOS .NE. 0) CALL FAIL(RANK, 'cannot create ' // PATH)
        WRITE (12, '(A,I0,A,I0)') 'f77 rank ', RANK, ' of ', NPROCS
        CLOSE (12)
        CALL SCR_COMPLETE_OUTPUT(1, IERR)
        IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'COMPLETE out')
        WRITE (*, '(A,I0,A,I0,A)') 'rank ', RANK, ' wrote ', NCKPT,
     +    ' checkpoints'
      ELSE
        IF (FLAG .NE. 1) CALL FAIL(RANK, 'no checkpoint on restart')
        IF (CNAME .NE. 'ckpt.3') CALL FAIL(RANK, 'offered ' // CNAME)
        CALL SCR_START_RESTART(CNAME, IERR)
        IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'START_RESTART')
        IF (CNAME .NE. 'ckpt.3') CALL FAIL(RANK, 'started ' // CNAME)
        WRITE (FNAME, '(A,I0,A)') 'ckpt.3/rank_', RANK, '.dat'
        CALL SCR_ROUTE_FILE(FNAME, PATH, IERR)
        IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'ROUTE_FILE back')
        OPEN (UNIT=13, FILE=PATH, ACCESS='STREAM',
     +    FORM='UNFORMATTED', STATUS='OLD', ACTION='READ', IOSTAT=IOS)
        IF (IOS .NE. 0) CALL FAIL(RANK, 'cannot open ' // PATH)
        READ (13, IOSTAT=IOS) BACK
        IF (IOS .NE. 0) CALL FAIL(RANK, 'short checkpoint file')
        READ (13, IOSTAT=IOS) EXTRA
        IF (IOS .EQ. 0) CALL FAIL(RANK, 'bytes after the data')
        CLOSE (13)
        CALL FILL(DATA, NBYTES, 3, RANK)
        IF (BACK .NE. DATA) CALL FAIL(RANK, 'wrong bytes read back')
        CALL SCR_COMPLETE_RESTART(1, IERR)
        IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'COMPLETE_RESTART')
        WRITE (*, '(A,I0,2A)') 'rank ', RANK, ' restarted from ',
     +    TRIM(CNAME)
      END IF

      CALL SCR_FINALIZE(IERR)
      IF (IERR .NE. SCR_SUCCESS) CALL FAIL(RANK, 'SCR_FINALIZE')
      CALL MPI_FINALIZE(IERR)
      END

C     FILL sets checkpoint I's bytes for RANK.
      SUBROUTINE FILL(DATA, N, I, RANK)
      INTEGER N, I, RANK, K
      CHARACTER*(N) DATA
      DO 20 K = 1, N
        DATA(K:K) = CHAR(MOD(I * 31 + RANK * 7 + K * 13, 256))
   20 CONTINUE
      END

      SUBROUTINE FAIL(RANK, MSG)
      INCLUDE 'mpif.h'
      INTEGER RANK, IERR
      CHARACTER*(*) MSG
      WRITE (*, '(A,I0,2A)') 'FAIL rank ', RANK, ': ', TRIM(MSG)
      CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      STOP 1
      END
