! fake_bindings.F90: drives the Fortran bindings against the recording
! fake libscr (testdata/fakescr) for bindings_test.go. Built twice: with
! -DUSE_MODULE it calls module scr's procedures, without it libscrf's
! SCR_* subroutines through include 'scrf.h'; both builds must pass the
! same arguments to the C API and print the same results. The scenario is
! the first argument; each prints what came back, strings in brackets so
! that their blank padding shows.
program fake_bindings
#ifdef USE_MODULE
  use scr
#endif
  implicit none
#ifndef USE_MODULE
  include 'scrf.h'
#endif
  character(len=32) :: scenario
  character(len=16) :: name
  character(len=40) :: file
  character(len=8) :: short
  character(len=24) :: val
  character(len=8000) :: big
  integer :: ierr, flag, i

  call get_command_argument(1, scenario)
  select case (trim(scenario))
  case ('constants')
    print '(5(I0,1X))', SCR_SUCCESS, SCR_MAX_FILENAME, SCR_FLAG_NONE, &
      SCR_FLAG_CHECKPOINT, SCR_FLAG_OUTPUT
  case ('init')
    call SCR_INIT(ierr)
    print '(A,I0)', 'init ', ierr
    call SCR_FINALIZE(ierr)
    print '(A,I0)', 'finalize ', ierr
  case ('route')
    call SCR_ROUTE_FILE('ckpt.1/rank_0.dat   ', file, ierr)
    print '(3A,I0)', '[', file, '] ', ierr
    ! Leading blanks belong to the name; trailing ones do not.
    call SCR_ROUTE_FILE('  lead  ', file, ierr)
    print '(3A,I0)', '[', file, '] ', ierr
  case ('route-fail')
    file = 'left over'
    call SCR_ROUTE_FILE('gone.dat', file, ierr)
    print '(3A,I0)', '[', file, '] ', ierr
  case ('route-long')
    call SCR_ROUTE_FILE('x', short, ierr)
    print '(3A,I0)', '[', short, '] ', ierr
  case ('have-restart')
    name = 'left over'
    call SCR_HAVE_RESTART(flag, name, ierr)
    print '(A,I0,3A,I0)', 'flag ', flag, ' [', name, '] ', ierr
    name = 'left over'
    call SCR_HAVE_RESTART(flag, name, ierr)
    print '(A,I0,3A,I0)', 'flag ', flag, ' [', name, '] ', ierr
  case ('restart')
    call SCR_START_RESTART(name, ierr)
    print '(3A,I0)', '[', name, '] ', ierr
    call SCR_COMPLETE_RESTART(0, ierr)
    print '(A,I0)', 'complete ', ierr
  case ('output')
    call SCR_START_OUTPUT('step-10   ', SCR_FLAG_CHECKPOINT + SCR_FLAG_OUTPUT, ierr)
    print '(A,I0)', 'start ', ierr
    call SCR_COMPLETE_OUTPUT(1, ierr)
    print '(A,I0)', 'complete ', ierr
    ! A blank name reaches C as "" (the default name), never as NULL.
    call SCR_START_OUTPUT('    ', SCR_FLAG_NONE, ierr)
    print '(A,I0)', 'start ', ierr
    call SCR_COMPLETE_OUTPUT(0, ierr)
    print '(A,I0)', 'complete ', ierr
  case ('checkpoint')
    call SCR_NEED_CHECKPOINT(flag, ierr)
    print '(A,I0,1X,I0)', 'need ', flag, ierr
    call SCR_START_CHECKPOINT(ierr)
    print '(A,I0)', 'start ', ierr
    call SCR_COMPLETE_CHECKPOINT(0, ierr)
    print '(A,I0)', 'complete ', ierr
    call SCR_SHOULD_EXIT(flag, ierr)
    print '(A,I0,1X,I0)', 'exit ', flag, ierr
  case ('names')
    call SCR_CURRENT('ckpt.3  ', ierr)
    print '(A,I0)', 'current ', ierr
    call SCR_DROP('ckpt.2', ierr)
    print '(A,I0)', 'drop ', ierr
    call SCR_DELETE('dir/ckpt.1 ', ierr)
    print '(A,I0)', 'delete ', ierr
  case ('config')
    call SCR_CONFIG('SCR_FLUSH=1   ', val, ierr)
    print '(3A,I0)', '[', val, '] ', ierr
    call SCR_CONFIG('SCR_FLUSH', val, ierr)
    print '(3A,I0)', '[', val, '] ', ierr
    call SCR_CONFIG('SCR_DEBUG', val, ierr)
    print '(3A,I0)', '[', val, '] ', ierr
    call SCR_CONFIG('CKPT=0 TYPE', val, ierr)
    print '(3A,I0)', '[', val, '] ', ierr
    call SCR_CONFIG('CKPT=0 TYPE=XOR', val, ierr)
    print '(3A,I0)', '[', val, '] ', ierr
  case ('config-frees')
    ! The fake logs malloc's bytes in use at each SCR_Config: a binding
    ! that kept the 8000-byte values would hold 16000 more by the third.
    do i = 1, 3
      call SCR_CONFIG('SCR_PREFIX', big, ierr)
      if (ierr /= SCR_SUCCESS .or. len_trim(big) /= 8000) stop 2
    end do
    print '(A)', 'done'
#ifdef USE_MODULE
  case ('version')
    call SCR_GET_VERSION(short, ierr)
    print '(3A,I0)', '[', short, '] ', ierr
#endif
  case default
    print '(2A)', 'unknown scenario ', trim(scenario)
    stop 1
  end select
end program fake_bindings
