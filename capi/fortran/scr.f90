! scr.f90: module scr, a Fortran 2003 interface to ckpt's SCR-compatible
! API (SCR 3.1). SCR itself ships only an include file and a compiled
! libscrf (its users asked for a module: llnl/scr#45); this module gives
! the same sixteen subroutines, with the same arguments as libscrf's, as
! module procedures whose arguments the compiler checks, plus
! SCR_GET_VERSION. They call libscr's C functions directly through
! bind(C) interfaces (iso_c_binding), so they depend on no compiler's
! name mangling or hidden string lengths.
!
!   use scr
!   integer :: ierr, flag
!   character(len=SCR_MAX_FILENAME) :: name, file
!   call SCR_INIT(ierr)
!   call SCR_HAVE_RESTART(flag, name, ierr)
!
! Strings follow libscrf's rules: input strings lose their trailing
! blanks, output strings are padded with blanks, and an output cut short
! by the caller's variable sets IERROR to 1. A program uses either this
! module or include 'scrf.h', not both (they declare the same constants).
module scr
  use, intrinsic :: iso_c_binding, only: c_int, c_char, c_ptr, c_size_t, &
    c_null_char, c_associated, c_f_pointer
  implicit none
  private

  integer, parameter, public :: SCR_SUCCESS = 0
  integer, parameter, public :: SCR_MAX_FILENAME = 1024
  integer, parameter, public :: SCR_FLAG_NONE = 0
  integer, parameter, public :: SCR_FLAG_CHECKPOINT = 1
  integer, parameter, public :: SCR_FLAG_OUTPUT = 2

  public :: SCR_INIT, SCR_FINALIZE, SCR_SHOULD_EXIT, SCR_CONFIG
  public :: SCR_HAVE_RESTART, SCR_START_RESTART, SCR_COMPLETE_RESTART
  public :: SCR_NEED_CHECKPOINT, SCR_START_CHECKPOINT
  public :: SCR_COMPLETE_CHECKPOINT, SCR_START_OUTPUT
  public :: SCR_COMPLETE_OUTPUT, SCR_ROUTE_FILE, SCR_CURRENT, SCR_DROP
  public :: SCR_DELETE, SCR_GET_VERSION

  ! The value SCR's calls return on failure; scr.h leaves it unnamed.
  integer, parameter :: FAILURE = 1

  ! libscr's C functions (capi/include/scr.h), and libc's free and strlen
  ! for the strings SCR_Config and SCR_Get_version return.
  interface
    function c_init() bind(C, name="SCR_Init") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function c_init

    function c_finalize() bind(C, name="SCR_Finalize") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function c_finalize

    function c_config(config) bind(C, name="SCR_Config") result(val)
      import :: c_char, c_ptr
      character(kind=c_char), intent(in) :: config(*)
      type(c_ptr) :: val
    end function c_config

    function c_route_file(name, file) bind(C, name="SCR_Route_file") result(rc)
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      character(kind=c_char), intent(inout) :: file(*)
      integer(c_int) :: rc
    end function c_route_file

    function c_have_restart(flag, name) bind(C, name="SCR_Have_restart") result(rc)
      import :: c_int, c_char
      integer(c_int), intent(out) :: flag
      character(kind=c_char), intent(inout) :: name(*)
      integer(c_int) :: rc
    end function c_have_restart

    function c_start_restart(name) bind(C, name="SCR_Start_restart") result(rc)
      import :: c_int, c_char
      character(kind=c_char), intent(inout) :: name(*)
      integer(c_int) :: rc
    end function c_start_restart

    function c_complete_restart(valid) bind(C, name="SCR_Complete_restart") result(rc)
      import :: c_int
      integer(c_int), value :: valid
      integer(c_int) :: rc
    end function c_complete_restart

    function c_need_checkpoint(flag) bind(C, name="SCR_Need_checkpoint") result(rc)
      import :: c_int
      integer(c_int), intent(out) :: flag
      integer(c_int) :: rc
    end function c_need_checkpoint

    function c_start_checkpoint() bind(C, name="SCR_Start_checkpoint") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function c_start_checkpoint

    function c_complete_checkpoint(valid) bind(C, name="SCR_Complete_checkpoint") result(rc)
      import :: c_int
      integer(c_int), value :: valid
      integer(c_int) :: rc
    end function c_complete_checkpoint

    function c_start_output(name, flags) bind(C, name="SCR_Start_output") result(rc)
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: flags
      integer(c_int) :: rc
    end function c_start_output

    function c_complete_output(valid) bind(C, name="SCR_Complete_output") result(rc)
      import :: c_int
      integer(c_int), value :: valid
      integer(c_int) :: rc
    end function c_complete_output

    function c_current(name) bind(C, name="SCR_Current") result(rc)
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int) :: rc
    end function c_current

    function c_drop(name) bind(C, name="SCR_Drop") result(rc)
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int) :: rc
    end function c_drop

    function c_delete(name) bind(C, name="SCR_Delete") result(rc)
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int) :: rc
    end function c_delete

    function c_get_version() bind(C, name="SCR_Get_version") result(version)
      import :: c_ptr
      type(c_ptr) :: version
    end function c_get_version

    function c_should_exit(flag) bind(C, name="SCR_Should_exit") result(rc)
      import :: c_int
      integer(c_int), intent(out) :: flag
      integer(c_int) :: rc
    end function c_should_exit

    subroutine c_free(p) bind(C, name="free")
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine c_free

    function c_strlen(p) bind(C, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: n
    end function c_strlen
  end interface

contains

  ! cstr is s without its trailing blanks, terminated for C.
  pure function cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function cstr

  ! from_buf fills f with the terminated C string in buf, padded with
  ! blanks; ierror becomes FAILURE when the string does not fit in f.
  subroutine from_buf(buf, f, ierror)
    character(kind=c_char), intent(in) :: buf(:)
    character(len=*), intent(out) :: f
    integer, intent(inout) :: ierror
    integer :: i, n
    n = 0
    do while (n < size(buf))
      if (buf(n + 1) == c_null_char) exit
      n = n + 1
    end do
    f = ' '
    do i = 1, min(n, len(f))
      f(i:i) = buf(i)
    end do
    if (n > len(f)) ierror = FAILURE
  end subroutine from_buf

  ! from_ptr is from_buf for a string C returned by pointer.
  subroutine from_ptr(p, f, ierror)
    type(c_ptr), intent(in) :: p
    character(len=*), intent(out) :: f
    integer, intent(inout) :: ierror
    character(kind=c_char), pointer :: s(:)
    integer :: n
    n = int(c_strlen(p))
    call c_f_pointer(p, s, [n + 1])
    call from_buf(s, f, ierror)
  end subroutine from_ptr

  subroutine SCR_INIT(IERROR)
    integer, intent(out) :: IERROR
    IERROR = c_init()
  end subroutine SCR_INIT

  subroutine SCR_FINALIZE(IERROR)
    integer, intent(out) :: IERROR
    IERROR = c_finalize()
  end subroutine SCR_FINALIZE

  ! SCR_CONFIG: VAL receives the queried value, or blanks. A set or unset
  ! ("KEY=VALUE", "KEY=") succeeds; a query with no value fails. The
  ! string SCR_Config returns for a query is the caller's: it is freed.
  subroutine SCR_CONFIG(CONFIG, VAL, IERROR)
    character(len=*), intent(in) :: CONFIG
    character(len=*), intent(out) :: VAL
    integer, intent(out) :: IERROR
    type(c_ptr) :: p
    p = c_config(cstr(CONFIG))
    IERROR = SCR_SUCCESS
    VAL = ' '
    if (c_associated(p)) then
      call from_ptr(p, VAL, IERROR)
      call c_free(p)
    else if (is_query(CONFIG)) then
      IERROR = FAILURE
    end if
  end subroutine SCR_CONFIG

  ! is_query reports whether a configuration string asks for a value:
  ! one of its blank-separated items has no '='.
  pure logical function is_query(s)
    character(len=*), intent(in) :: s
    integer :: i
    logical :: in_item, has_eq
    is_query = .false.
    in_item = .false.
    has_eq = .false.
    do i = 1, len(s) + 1
      if (i > len(s)) then
        if (in_item .and. .not. has_eq) is_query = .true.
      else if (s(i:i) == ' ') then
        if (in_item .and. .not. has_eq) is_query = .true.
        in_item = .false.
        has_eq = .false.
      else
        in_item = .true.
        if (s(i:i) == '=') has_eq = .true.
      end if
    end do
  end function is_query

  subroutine SCR_ROUTE_FILE(NAME, FILE, IERROR)
    character(len=*), intent(in) :: NAME
    character(len=*), intent(out) :: FILE
    integer, intent(out) :: IERROR
    character(kind=c_char) :: buf(SCR_MAX_FILENAME)
    buf(1) = c_null_char
    IERROR = c_route_file(cstr(NAME), buf)
    FILE = ' '
    if (IERROR == SCR_SUCCESS) call from_buf(buf, FILE, IERROR)
  end subroutine SCR_ROUTE_FILE

  ! SCR_HAVE_RESTART: NAME receives the checkpoint's name when FLAG is 1,
  ! blanks otherwise.
  subroutine SCR_HAVE_RESTART(FLAG, NAME, IERROR)
    integer, intent(out) :: FLAG
    character(len=*), intent(out) :: NAME
    integer, intent(out) :: IERROR
    character(kind=c_char) :: buf(SCR_MAX_FILENAME)
    integer(c_int) :: f
    buf(1) = c_null_char
    f = 0
    IERROR = c_have_restart(f, buf)
    FLAG = f
    NAME = ' '
    if (IERROR == SCR_SUCCESS .and. FLAG /= 0) call from_buf(buf, NAME, IERROR)
  end subroutine SCR_HAVE_RESTART

  subroutine SCR_START_RESTART(NAME, IERROR)
    character(len=*), intent(out) :: NAME
    integer, intent(out) :: IERROR
    character(kind=c_char) :: buf(SCR_MAX_FILENAME)
    buf(1) = c_null_char
    IERROR = c_start_restart(buf)
    NAME = ' '
    if (IERROR == SCR_SUCCESS) call from_buf(buf, NAME, IERROR)
  end subroutine SCR_START_RESTART

  subroutine SCR_COMPLETE_RESTART(VALID, IERROR)
    integer, intent(in) :: VALID
    integer, intent(out) :: IERROR
    IERROR = c_complete_restart(int(VALID, c_int))
  end subroutine SCR_COMPLETE_RESTART

  subroutine SCR_NEED_CHECKPOINT(FLAG, IERROR)
    integer, intent(out) :: FLAG
    integer, intent(out) :: IERROR
    integer(c_int) :: f
    f = 0
    IERROR = c_need_checkpoint(f)
    FLAG = f
  end subroutine SCR_NEED_CHECKPOINT

  subroutine SCR_START_CHECKPOINT(IERROR)
    integer, intent(out) :: IERROR
    IERROR = c_start_checkpoint()
  end subroutine SCR_START_CHECKPOINT

  subroutine SCR_COMPLETE_CHECKPOINT(VALID, IERROR)
    integer, intent(in) :: VALID
    integer, intent(out) :: IERROR
    IERROR = c_complete_checkpoint(int(VALID, c_int))
  end subroutine SCR_COMPLETE_CHECKPOINT

  ! SCR_START_OUTPUT: a blank NAME names the dataset scr.dataset.<id>.
  subroutine SCR_START_OUTPUT(NAME, FLAGS, IERROR)
    character(len=*), intent(in) :: NAME
    integer, intent(in) :: FLAGS
    integer, intent(out) :: IERROR
    IERROR = c_start_output(cstr(NAME), int(FLAGS, c_int))
  end subroutine SCR_START_OUTPUT

  subroutine SCR_COMPLETE_OUTPUT(VALID, IERROR)
    integer, intent(in) :: VALID
    integer, intent(out) :: IERROR
    IERROR = c_complete_output(int(VALID, c_int))
  end subroutine SCR_COMPLETE_OUTPUT

  subroutine SCR_CURRENT(NAME, IERROR)
    character(len=*), intent(in) :: NAME
    integer, intent(out) :: IERROR
    IERROR = c_current(cstr(NAME))
  end subroutine SCR_CURRENT

  subroutine SCR_DROP(NAME, IERROR)
    character(len=*), intent(in) :: NAME
    integer, intent(out) :: IERROR
    IERROR = c_drop(cstr(NAME))
  end subroutine SCR_DROP

  subroutine SCR_DELETE(NAME, IERROR)
    character(len=*), intent(in) :: NAME
    integer, intent(out) :: IERROR
    IERROR = c_delete(cstr(NAME))
  end subroutine SCR_DELETE

  subroutine SCR_SHOULD_EXIT(FLAG, IERROR)
    integer, intent(out) :: FLAG
    integer, intent(out) :: IERROR
    integer(c_int) :: f
    f = 0
    IERROR = c_should_exit(f)
    FLAG = f
  end subroutine SCR_SHOULD_EXIT

  ! SCR_GET_VERSION: VERSION receives "v3.1.0" (SCR documents this call
  ! for Fortran but its libscrf never had it). The string is static in
  ! the library and is not freed.
  subroutine SCR_GET_VERSION(VERSION, IERROR)
    character(len=*), intent(out) :: VERSION
    integer, intent(out) :: IERROR
    type(c_ptr) :: p
    IERROR = SCR_SUCCESS
    VERSION = ' '
    p = c_get_version()
    if (c_associated(p)) then
      call from_ptr(p, VERSION, IERROR)
    else
      IERROR = FAILURE
    end if
  end subroutine SCR_GET_VERSION

end module scr
