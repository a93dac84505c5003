! The Fortran module's exchange matrix in one launch: every available
! transport x standard/staged/faces x compact/sequence x periodic/open, each
! as two exchanges in flight at once, one of real32 fields and one of real64
! fields, with 1-based and 0-based interiors (swapped from one case to the
! next); every cell checked against its global coordinates, twice per case.
! Then bad calls, each with stat= and errmsg=: a code and a message, and the
! program goes on. Exit status 1 on any failure.
!
!   exchange_matrix          the matrix and the bad calls
!   exchange_matrix stop     one bad call without stat=: stops with its message
!
! HALOX_TEST_MATRIX=reduced or minimal (oversubscribed runs): fewer transports.
program exchange_matrix
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real32, real64, error_unit
  implicit none
  integer, parameter :: global(3) = [12, 10, 8]
  ! Halo widths below (lo) and above (hi) the interior along x, y, z: lo /= hi along x and y,
  ! so halos put where halo_lo= and halo_hi= do not say are found wrong.
  integer, parameter :: lo(3) = [1, 2, 1], hi(3) = [2, 1, 1]
  character(len=*), parameter :: algorithms(3) = [character(len=8) :: "standard", "staged", &
                                                  "faces"]
  character(len=*), parameter :: groupings(2) = [character(len=8) :: "compact", "sequence"]
  type(halox_decomposition) :: decomps(2)
  character(len=:), allocatable :: transports, transport, matrix
  character(len=32) :: argument
  integer :: rank, failures, all_failures, cases, p, a, g, start, finish
  logical :: periodic

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call get_command_argument(1, argument)
  if (argument == "stop") call stop_without_stat()
  failures = 0
  cases = 0
  call halox_decomposition_create(decomps(1), MPI_COMM_WORLD, global=global)
  ! The integer communicator of codes still on `use mpi`.
  call halox_decomposition_create(decomps(2), MPI_COMM_WORLD%MPI_VAL, global=global, &
                                  periodic=[.false., .false., .false.])
  transports = halox_available_transports(decomps(1))
  call get_environment_variable_text("HALOX_TEST_MATRIX", matrix)
  if (matrix == "minimal" .or. matrix == "reduced") transports = "mpi-p2p shm"
  start = 1
  do while (start <= len(transports))
    finish = index(transports(start:) // " ", " ") + start - 2
    transport = transports(start:finish)
    start = finish + 2
    do p = 1, 2
      periodic = p == 1
      do a = 1, size(algorithms)
        do g = 1, size(groupings)
          cases = cases + 1
          call check_case(decomps(p), transport, trim(algorithms(a)), trim(groupings(g)), &
                          periodic, mod(cases, 2) == 0, failures)
        end do
      end do
    end do
  end do
  call bad_calls(decomps(1), failures)
  call halox_decomposition_destroy(decomps(1))
  call halox_decomposition_destroy(decomps(2))
  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print "(a, i0, a, a, a, i0)", "exchange_matrix: ", cases, &
    " cases (", transports, "), failures: ", all_failures
  call MPI_Finalize()
  if (all_failures /= 0) error stop 1

contains

  subroutine get_environment_variable_text(name, value)
    character(len=*), intent(in) :: name
    character(len=:), allocatable, intent(out) :: value
    integer :: length
    call get_environment_variable(name, length=length)
    allocate(character(len=length) :: value)
    if (length > 0) call get_environment_variable(name, value)
  end subroutine get_environment_variable_text

  ! The value a cell must hold after an exchange (-1: a halo cell nobody
  ! fills): its global coordinates, wrapped where periodic, plus 1000 per field.
  real(real64) function expected(cell, offset, extent, is_periodic, faces_only, field)
    integer, intent(in) :: cell(3), offset(3), extent(3), field
    logical, intent(in) :: is_periodic, faces_only
    integer :: gc(3), d, outside
    outside = count(cell < 0 .or. cell >= extent)
    expected = -1
    if (faces_only .and. outside > 1) return
    gc = offset + cell
    do d = 1, 3
      if (is_periodic) then
        gc(d) = modulo(gc(d), global(d))
      else if (gc(d) < 0 .or. gc(d) >= global(d)) then
        return
      end if
    end do
    expected = 1 + gc(1) + global(1) * (gc(2) + global(2) * gc(3)) + 1000 * field
  end function expected

  ! Per cell of an array shaped n (any lower bounds: the first element is the
  ! first halo cell), what it holds before an exchange (interior cells their
  ! values, halo cells -1) or must hold after one.
  function cells(n, offset, extent, is_periodic, faces_only, field, before) result(values)
    integer, intent(in) :: n(3), offset(3), extent(3), field
    logical, intent(in) :: is_periodic, faces_only, before
    real(real64) :: values(n(1), n(2), n(3))
    integer :: i, j, k, cell(3)
    do k = 1, n(3)
      do j = 1, n(2)
        do i = 1, n(1)
          cell = [i, j, k] - 1 - lo
          values(i, j, k) = -1
          if (.not. before .or. all(cell >= 0 .and. cell < extent)) &
            values(i, j, k) = expected(cell, offset, extent, is_periodic, faces_only, field)
        end do
      end do
    end do
  end function cells

  ! One case: a real32 and a real64 exchange in flight together, one with
  ! 1-based interiors and the other 0-based (swap_bases swaps them).
  subroutine check_case(decomp, transport, algorithm, grouping, is_periodic, swap_bases, failures)
    type(halox_decomposition), intent(in) :: decomp
    character(len=*), intent(in) :: transport, algorithm, grouping
    logical, intent(in) :: is_periodic, swap_bases
    integer, intent(inout) :: failures
    real(real32), allocatable, target :: a32(:,:,:), b32(:,:,:)
    real(real64), allocatable, target :: a64(:,:,:), b64(:,:,:)
    type(halox_exchange) :: ex32, ex64
    real(real64), allocatable :: before(:,:,:,:), after(:,:,:,:)
    integer :: extent(3), offset(3), base32, base64, round, wrong, stat, f
    character(len=512) :: message
    call halox_subdomain(decomp, extent, offset)
    base32 = merge(0, 1, swap_bases)
    base64 = 1 - base32
    allocate(a32(base32 - lo(1):base32 + extent(1) - 1 + hi(1), &
                 base32 - lo(2):base32 + extent(2) - 1 + hi(2), &
                 base32 - lo(3):base32 + extent(3) - 1 + hi(3)))
    allocate(b32, mold=a32)
    allocate(a64(base64 - lo(1):base64 + extent(1) - 1 + hi(1), &
                 base64 - lo(2):base64 + extent(2) - 1 + hi(2), &
                 base64 - lo(3):base64 + extent(3) - 1 + hi(3)))
    allocate(b64, mold=a64)
    call halox_exchange_create(ex32, decomp, [halox_field(a32), halox_field(b32)], halo_lo=lo, &
                               halo_hi=hi, transport=transport, algorithm=algorithm, &
                               grouping=grouping, timeout=60, stat=stat, errmsg=message)
    ! The widths on each field, as its own
    if (stat == 0) call halox_exchange_create(ex64, decomp, &
                                              [halox_field(a64, halo_lo=lo, halo_hi=hi), &
                                               halox_field(b64, halo_lo=lo, halo_hi=hi)], &
                                              transport=transport, algorithm=algorithm, &
                                              grouping=grouping, stat=stat, errmsg=message)
    if (stat /= 0) then
      write(error_unit, "(a, i0, 8a)") "rank ", rank, ": ", transport, "/", algorithm, "/", &
        grouping, ": ", trim(message)
      failures = failures + 1
      return
    end if
    if (halox_transport(ex64) /= transport) failures = failures + 1
    ! Fields 0, 1 (real32) and 2, 3 (real64), before and after each exchange
    allocate(before(size(a32, 1), size(a32, 2), size(a32, 3), 0:3))
    allocate(after, mold=before)
    do f = 0, 3
      before(:, :, :, f) = cells(shape(a32), offset, extent, is_periodic, algorithm == "faces", &
                                 f, .true.)
      after(:, :, :, f) = cells(shape(a32), offset, extent, is_periodic, algorithm == "faces", &
                                f, .false.)
    end do
    do round = 1, 2
      a32 = real(before(:, :, :, 0), real32)
      b32 = real(before(:, :, :, 1), real32)
      a64 = before(:, :, :, 2)
      b64 = before(:, :, :, 3)
      call halox_start(ex32)
      call halox_start(ex64)
      call halox_wait(ex64)
      call halox_wait(ex32)
      wrong = count(a32 /= real(after(:, :, :, 0), real32)) + &
              count(b32 /= real(after(:, :, :, 1), real32)) + &
              count(a64 /= after(:, :, :, 2)) + count(b64 /= after(:, :, :, 3))
      if (wrong /= 0) then
        write(error_unit, "(a, i0, 8a, i0, a)") "rank ", rank, ": ", transport, "/", algorithm, &
          "/", grouping, merge("/periodic", "/open    ", is_periodic), ": ", wrong, " wrong cells"
        failures = failures + 1
      end if
    end do
    call halox_exchange_destroy(ex32)
    call halox_exchange_destroy(ex64)
  end subroutine check_case

  ! The call fails with `code`, its message contains `words`.
  subroutine expect(what, stat, message, code, words, failures)
    character(len=*), intent(in) :: what, message, words
    integer, intent(in) :: stat, code
    integer, intent(inout) :: failures
    if (stat == code .and. index(message, words) > 0) return
    write(error_unit, "(a, i0, 3a, i0, 3a, i0, 3a)") "rank ", rank, ": ", what, ": stat ", stat, &
      " '", trim(message), "', expected ", code, " with '", words, "'"
    failures = failures + 1
  end subroutine expect

  subroutine bad_calls(decomp, failures)
    type(halox_decomposition), intent(in) :: decomp
    integer, intent(inout) :: failures
    type(halox_decomposition) :: never_created
    type(halox_exchange) :: ex, copy
    real(real64), allocatable, target :: u(:,:,:), wrong_shape(:,:,:)
    real(real32), allocatable, target :: f(:,:,:)
    integer :: extent(3), offset(3), stat
    character(len=512) :: message
    call halox_subdomain(decomp, extent, offset)
    allocate(u(0:extent(1) + 1, 0:extent(2) + 1, 0:extent(3) + 1), source=0.0_real64)
    allocate(f(0:extent(1) + 1, 0:extent(2) + 1, 0:extent(3) + 1), source=0.0_real32)
    ! One rank's array does not match: every rank hears of it.
    allocate(wrong_shape(0:extent(1) + 1 + merge(1, 0, rank == 0), 0:extent(2) + 1, &
                         0:extent(3) + 1))
    message = ""
    ! Fields of two kinds in one exchange: each keeps its own.
    call halox_exchange_create(ex, decomp, [halox_field(u), halox_field(f)], halo=1, stat=stat, &
                               errmsg=message)
    call expect("mixed kinds", stat, message, HALOX_SUCCESS, "", failures)
    if (stat == HALOX_SUCCESS) call halox_exchange_destroy(ex)
    call halox_exchange_create(ex, decomp, [halox_field(wrong_shape)], halo=1, stat=stat, &
                               errmsg=message)
    call expect("shape", stat, message, HALOX_ERROR_USAGE, &
                "halox_exchange_create: rank 0: field 'field 0' (cell, double (real64)) is", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo_lo=[1, 1, 1], &
                               halo_hi=[1, 1, extent(3) + 1], stat=stat, errmsg=message)
    call expect("halo wider than the sub-domain", stat, message, HALOX_ERROR_USAGE, "halo", &
                failures)
    ! Six widths in one list have no order to read them in: refused, the way named.
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=[1, 1, 1, 1, 1, 1], stat=stat, &
                               errmsg=message)
    call expect("six halo widths", stat, message, HALOX_ERROR_USAGE, &
                "halo= takes one width for every side, got 6; per side, give halo_lo=", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u, halo=[1, 1, 1, 1, 1, 1])], &
                               stat=stat, errmsg=message)
    call expect("six halo widths on a field", stat, message, HALOX_ERROR_USAGE, &
                "the 1st field: halo= takes one width for every side, got 6", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo_lo=[1, 1, 1], stat=stat, &
                               errmsg=message)
    call expect("halo_lo= alone", stat, message, HALOX_ERROR_USAGE, "go together", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, halo_lo=[1, 1, 1], &
                               halo_hi=[1, 1, 1], stat=stat, errmsg=message)
    call expect("halo= beside halo_lo=", stat, message, HALOX_ERROR_USAGE, "not both", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo_lo=[1, 1], halo_hi=[1, 1, 1], &
                               stat=stat, errmsg=message)
    call expect("two widths for halo_lo=", stat, message, HALOX_ERROR_USAGE, &
                "halo_lo= takes three widths (x, y, z), got 2", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo_lo=[1, 1, 1], &
                               halo_hi=[1, -1, 1], stat=stat, errmsg=message)
    call expect("a negative width", stat, message, HALOX_ERROR_USAGE, &
                "must not be negative, got halo_lo=[1, 1, 1], halo_hi=[1, -1, 1]", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, transport="no-such", &
                               stat=stat, errmsg=message)
    call expect("unknown transport", stat, message, HALOX_ERROR_USAGE, "no-such", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, transport="cuda-ipc", &
                               stat=stat, errmsg=message)
    call expect("unavailable transport", stat, message, HALOX_ERROR_USAGE, "cuda-ipc", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u(:, :, 0:1))], halo=1, stat=stat, &
                               errmsg=message)
    call expect("a section", stat, message, HALOX_ERROR_USAGE, "field 'field 0' (cell, double", &
                failures)
    call halox_exchange_create(ex, decomp, [halox_field(u(::2, :, :))], halo=1, stat=stat, &
                               errmsg=message)
    call expect("strides", stat, message, HALOX_ERROR_USAGE, "not contiguous", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, auto="everything", &
                               stat=stat, errmsg=message)
    call expect("auto=", stat, message, HALOX_ERROR_USAGE, "everything", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, timeout="soon", &
                               stat=stat, errmsg=message)
    call expect("timeout=", stat, message, HALOX_ERROR_USAGE, "timeout=", failures)
    call halox_exchange_create(ex, never_created, [halox_field(u)], halo=1, stat=stat, &
                               errmsg=message)
    call expect("no decomposition", stat, message, HALOX_ERROR_USAGE, "handle is NULL", failures)
    call halox_start(ex, stat=stat, errmsg=message)
    call expect("start, no exchange", stat, message, HALOX_ERROR_USAGE, "handle is NULL", failures)
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, timeout=30.0, grouping=1)
    call halox_wait(ex, stat=stat, errmsg=message)
    call expect("wait without start", stat, message, HALOX_ERROR_STATE, "not started", failures)
    call halox_start(ex)
    call halox_start(ex, stat=stat, errmsg=message)
    call expect("start twice", stat, message, HALOX_ERROR_STATE, "in flight", failures)
    call halox_wait(ex)
    call halox_exchange_halos(ex)
    if (halox_field_grouping(ex) /= "1") failures = failures + 1
    copy = ex
    call halox_exchange_destroy(ex)
    call halox_exchange_destroy(ex, stat=stat, errmsg=message)
    call expect("destroy twice", stat, message, HALOX_ERROR_USAGE, "handle is NULL", failures)
    call halox_exchange_destroy(copy, stat=stat, errmsg=message)
    call expect("a destroyed copy", stat, message, HALOX_ERROR_USAGE, "not a live one", failures)
    call halox_subdomain(never_created, extent, stat=stat, errmsg=message)
    call expect("subdomain", stat, message, HALOX_ERROR_USAGE, "handle is NULL", failures)
  end subroutine bad_calls

  ! Without stat=, a failing call stops the program with its message.
  subroutine stop_without_stat()
    type(halox_decomposition) :: decomp
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: u(:,:,:)
    integer :: extent(3)
    call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=global)
    call halox_subdomain(decomp, extent)
    allocate(u(0:extent(1) + 1, 0:extent(2) + 1, 0:extent(3) + 1))
    call halox_exchange_create(ex, decomp, [halox_field(u)], halo=1, transport="no-such")
    print "(a)", "not reached"
  end subroutine stop_without_stat

end program exchange_matrix
