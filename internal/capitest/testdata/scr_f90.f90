! scr_f90.f90: SCR's sequence from a Fortran 90 program through module
! scr (use scr), run by bindings_test.go under mpirun.
!
! Both runs check SCR_GET_VERSION (module scr's own).
!   scr_f90 start:   sets SCR_CHECKPOINT_INTERVAL=1 with SCR_CONFIG and
!                    reads it back; no checkpoint is on offer; for steps
!                    1 to 4 asks SCR_NEED_CHECKPOINT (which must say yes)
!                    and writes checkpoint step.N (state/rank_R.bin:
!                    integers that depend on the step and the rank), then
!                    the OUTPUT dataset f90out.1 (f90out/rank_R.txt).
!   scr_f90 restart: step.4 is on offer; reads it back, checks every
!                    value and that nothing follows them.
! Any difference ends the job with MPI_ABORT and a non-zero status.
program scr_f90
  use mpi
  use scr
  implicit none
  integer, parameter :: nsteps = 4, n = 3000
  integer :: ierr, rank, nprocs, flag, step, u, ios
  integer :: data(n), back(n)
  character(len=16) :: mode
  character(len=32) :: val
  character(len=64) :: dname, fname
  character(len=SCR_MAX_FILENAME) :: path, cname
  character(len=1) :: extra

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  call get_command_argument(1, mode)

  call SCR_GET_VERSION(val, ierr)
  call check(ierr == SCR_SUCCESS .and. val == 'v3.1.0', 'SCR_GET_VERSION gave "' // trim(val) // '"')

  if (mode == 'start') then
    call SCR_CONFIG('SCR_CHECKPOINT_INTERVAL=1', val, ierr)
    call check(ierr == SCR_SUCCESS .and. val == ' ', 'SCR_CONFIG set')
    call SCR_CONFIG('SCR_CHECKPOINT_INTERVAL', val, ierr)
    call check(ierr == SCR_SUCCESS .and. val == '1', 'SCR_CONFIG query gave "' // trim(val) // '"')
  end if

  call SCR_INIT(ierr)
  call check(ierr == SCR_SUCCESS, 'SCR_INIT')
  call SCR_HAVE_RESTART(flag, cname, ierr)
  call check(ierr == SCR_SUCCESS, 'SCR_HAVE_RESTART')

  if (mode == 'start') then
    call check(flag == 0 .and. cname == ' ', 'a checkpoint on offer on the first run')
    do step = 1, nsteps
      call SCR_NEED_CHECKPOINT(flag, ierr)
      call check(ierr == SCR_SUCCESS .and. flag == 1, 'SCR_NEED_CHECKPOINT with SCR_CHECKPOINT_INTERVAL=1')
      write (dname, '(A,I0)') 'step.', step
      call SCR_START_OUTPUT(dname, SCR_FLAG_CHECKPOINT, ierr)
      call check(ierr == SCR_SUCCESS, 'SCR_START_OUTPUT')
      write (fname, '(A,I0,A)') 'state/rank_', rank, '.bin'
      call SCR_ROUTE_FILE(fname, path, ierr)
      call check(ierr == SCR_SUCCESS .and. path /= ' ', 'SCR_ROUTE_FILE')
      call fill(data, step)
      open (newunit=u, file=path, access='stream', form='unformatted', status='replace', iostat=ios)
      call check(ios == 0, 'cannot create ' // trim(path))
      write (u) data
      close (u)
      call SCR_COMPLETE_OUTPUT(1, ierr)
      call check(ierr == SCR_SUCCESS, 'SCR_COMPLETE_OUTPUT')
      call SCR_SHOULD_EXIT(flag, ierr)
      call check(ierr == SCR_SUCCESS .and. flag == 0, 'SCR_SHOULD_EXIT')
    end do

    call SCR_START_OUTPUT('f90out.1', SCR_FLAG_OUTPUT, ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_START_OUTPUT output')
    write (fname, '(A,I0,A)') 'f90out/rank_', rank, '.txt'
    call SCR_ROUTE_FILE(fname, path, ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_ROUTE_FILE output')
    open (newunit=u, file=path, status='replace', iostat=ios)
    call check(ios == 0, 'cannot create ' // trim(path))
    write (u, '(A,I0,A,I0)') 'f90 rank ', rank, ' of ', nprocs
    close (u)
    call SCR_COMPLETE_OUTPUT(1, ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_COMPLETE_OUTPUT output')
    write (*, '(A,I0,A,I0,A)') 'rank ', rank, ' wrote ', nsteps, ' checkpoints'
  else
    call check(flag == 1, 'no checkpoint on offer on restart')
    call check(cname == 'step.4', 'offered ' // trim(cname))
    call SCR_START_RESTART(cname, ierr)
    call check(ierr == SCR_SUCCESS .and. cname == 'step.4', 'SCR_START_RESTART gave ' // trim(cname))
    write (fname, '(A,I0,A)') 'state/rank_', rank, '.bin'
    call SCR_ROUTE_FILE(fname, path, ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_ROUTE_FILE in restart')
    open (newunit=u, file=path, access='stream', form='unformatted', status='old', action='read', iostat=ios)
    call check(ios == 0, 'cannot open ' // trim(path))
    read (u, iostat=ios) back
    call check(ios == 0, 'short checkpoint file')
    read (u, iostat=ios) extra
    call check(ios /= 0, 'bytes after the data')
    close (u)
    call fill(data, 4)
    call check(all(back == data), 'wrong values read back')
    call SCR_COMPLETE_RESTART(1, ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_COMPLETE_RESTART')
    write (*, '(A,I0,2A)') 'rank ', rank, ' restarted from ', trim(cname)
  end if

  call SCR_FINALIZE(ierr)
  call check(ierr == SCR_SUCCESS, 'SCR_FINALIZE')
  call MPI_FINALIZE(ierr)

contains

  subroutine fill(d, step)
    integer, intent(out) :: d(:)
    integer, intent(in) :: step
    integer :: k
    do k = 1, size(d)
      d(k) = step * 1000003 + rank * 7919 + k
    end do
  end subroutine fill

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (ok) return
    write (*, '(A,I0,2A)') 'FAIL rank ', rank, ': ', what
    call MPI_ABORT(MPI_COMM_WORLD, 1, e)
    stop 1
  end subroutine check
end program scr_f90
