! Reverse calls through the Fortran module, checked point by point: a cell, a
! node (LULESH's halo: 0 below, 1 above) and an x-face field, real64 and
! real32, open and periodic; sum, min and max into the owner and on every
! holder, by names=, fields= and mask=, at the whole halo and at depth 1; an
! empty subset, a short mask and a depth too deep refused, each error in the
! Fortran call's name; algorithm="auto" measured. Exit status 1 on any failure.
!
! The checker does not ask the library: every rank gathers every rank's
! copies with their global indices (MPI_Allgatherv) and combines those of
! each of its points itself. The values are small integers: every sum is
! exact whatever its order.
program reverse_fields
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real32, real64, error_unit
  implicit none
  integer, parameter :: global(3) = [7, 6, 5], nfields = 3
  integer, parameter :: locations(nfields) = [HALOX_CELL, HALOX_VERTEX, HALOX_X_FACE]
  integer, parameter :: lo(3, nfields) = reshape([2, 2, 2, 0, 0, 0, 1, 1, 1], [3, nfields])
  integer, parameter :: hi(3, nfields) = reshape([2, 2, 2, 1, 1, 1, 2, 1, 1], [3, nfields])

  real(real64), allocatable, target :: rho(:,:,:), flux(:,:,:)
  real(real32), allocatable, target :: fx(:,:,:)
  type(halox_decomposition) :: decomp
  type(halox_exchange) :: ex
  integer :: rank, ranks, failures, all_failures, extent(3), offset(3), points(3, nfields)
  integer :: op, depth, pass, stat, p
  integer, allocatable :: none(:)
  logical :: periodic(3), every
  character(len=256) :: errmsg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)
  failures = 0
  do p = 1, 2
    periodic = p == 1
    call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=global, periodic=periodic)
    call halox_subdomain(decomp, extent, offset)
    call allocate_fields()
    call halox_exchange_create(ex, decomp, &
      [halox_field(rho, halo=2, name="rho"), &
       halox_field(fx, location=HALOX_VERTEX, halo_lo=[0, 0, 0], halo_hi=[1, 1, 1], name="fx"), &
       halox_field(flux, location=HALOX_X_FACE, halo_lo=[1, 1, 1], halo_hi=[2, 1, 1], &
                   name="flux")])
    do pass = 1, 2
      every = pass == 2
      do op = HALOX_SUM, HALOX_MAX
        do depth = 0, 1
          call fill(op + 3 * depth + 7 * pass)
          ! fx's halo (0 below, 1 above) is no cell deep: it moves at depth 0 only.
          if (depth == 0) then
            call halox_reverse(ex, op=op, every_holder=every)
          else if (op == HALOX_MIN) then
            call halox_reverse_start(ex, op=op, fields=[1, 3], depth=depth, every_holder=every)
            call halox_reverse_wait(ex)
          else
            call halox_reverse(ex, op=op, names=["rho ", "flux"], depth=depth, &
                               every_holder=every)
          end if
          call check(op, depth, every, op + 3 * depth + 7 * pass, [.true., depth == 0, .true.])
        end do
      end do
    end do
    ! Bad calls: one clear error, nothing moved.
    errmsg = ""
    call halox_reverse(ex, names=["rho"], depth=3, stat=stat, errmsg=errmsg)
    if (stat /= HALOX_ERROR_USAGE .or. index(errmsg, "halox_reverse: depth 3 is deeper") /= 1) &
      call fail("depth 3: stat " // trim(str(stat)) // " " // trim(errmsg))
    errmsg = ""
    ! A subset computed empty (gfortran passes the literal [integer ::] as absent).
    allocate(none(0))
    call halox_reverse(ex, fields=none, stat=stat, errmsg=errmsg)
    deallocate(none)
    if (stat /= HALOX_ERROR_USAGE .or. index(errmsg, "halox_reverse: fields=, names= or mask=") /= 1) &
      call fail("empty subset: stat " // trim(str(stat)) // " " // trim(errmsg))
    ! A subset by mask, as a code marks its field list.
    call fill(50)
    call halox_reverse(ex, mask=[.true., .false., .true.])
    call check(HALOX_SUM, 0, .false., 50, [.true., .false., .true.])
    errmsg = ""
    call halox_exchange_halos(ex, mask=[.false., .false., .false.], stat=stat, errmsg=errmsg)
    if (stat /= HALOX_ERROR_USAGE .or. &
        index(errmsg, "halox_exchange_halos: fields=, names= or mask= lists no field") /= 1) &
      call fail("empty mask: stat " // trim(str(stat)) // " " // trim(errmsg))
    errmsg = ""
    call halox_reverse(ex, mask=[.true.], stat=stat, errmsg=errmsg)
    if (stat /= HALOX_ERROR_USAGE .or. index(errmsg, "mask= has 1 entries for 3 fields") == 0) &
      call fail("short mask: " // trim(errmsg))
    ! Every error in the caller's own words: the Fortran name in front.
    errmsg = ""
    call halox_start(ex, names=["rho"], depth=3, stat=stat, errmsg=errmsg)
    if (stat /= HALOX_ERROR_USAGE .or. index(errmsg, "halox_start: depth 3 is deeper") /= 1) &
      call fail("depth 3 forward: " // trim(errmsg))
    call halox_exchange_destroy(ex)
    ! "auto" for the algorithm as for the transport.
    call halox_exchange_create(ex, decomp, &
      [halox_field(rho, halo=2, name="rho"), &
       halox_field(fx, location=HALOX_VERTEX, halo_lo=[0, 0, 0], halo_hi=[1, 1, 1], name="fx"), &
       halox_field(flux, location=HALOX_X_FACE, halo_lo=[1, 1, 1], halo_hi=[2, 1, 1], &
                   name="flux")], &
      algorithm="auto", grouping="auto")
    if (halox_algorithm(ex) /= "standard" .and. halox_algorithm(ex) /= "staged") &
      call fail("algorithm=auto chose " // halox_algorithm(ex))
    call halox_exchange_destroy(ex)
    call halox_decomposition_destroy(decomp)
    deallocate(rho, fx, flux)
  end do

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print "(a, i0, a, i0)", "reverse_fields: ranks ", ranks, ", failures: ", &
    all_failures
  call MPI_Finalize()
  if (all_failures /= 0) error stop 1

contains

  function str(i) result(s)
    integer, intent(in) :: i
    character(len=16) :: s
    write(s, "(i0)") i
  end function str

  subroutine fail(what)
    character(len=*), intent(in) :: what
    failures = failures + 1
    if (failures < 5) write(error_unit, "(a, i0, a, a)") "rank ", rank, ": ", what
  end subroutine fail

  subroutine allocate_fields()
    integer :: f, k
    do f = 1, nfields
      points(:, f) = extent
      do k = 1, 3
        if (staggered(locations(f), k) .and. .not. periodic(k) .and. &
            offset(k) + extent(k) == global(k)) points(k, f) = extent(k) + 1
      end do
    end do
    allocate(rho(1 - lo(1,1):points(1,1) + hi(1,1), 1 - lo(2,1):points(2,1) + hi(2,1), &
                 1 - lo(3,1):points(3,1) + hi(3,1)))
    allocate(fx(1 - lo(1,2):points(1,2) + hi(1,2), 1 - lo(2,2):points(2,2) + hi(2,2), &
                1 - lo(3,2):points(3,2) + hi(3,2)))
    allocate(flux(1 - lo(1,3):points(1,3) + hi(1,3), 1 - lo(2,3):points(2,3) + hi(2,3), &
                  1 - lo(3,3):points(3,3) + hi(3,3)))
  end subroutine allocate_fields

  logical function staggered(location, k)
    integer, intent(in) :: location, k
    staggered = location == HALOX_VERTEX .or. (location == HALOX_X_FACE .and. k == 1)
  end function staggered

  ! A copy's value from its holder, its local point and the epoch: 1 to 40.
  pure integer function contribution(f, i, j, k, epoch)
    integer, intent(in) :: f, i, j, k, epoch
    contribution = 1 + modulo(rank * 37 + (i + 9) * 7 + (j + 9) * 11 + (k + 9) * 13 + f * 5 &
                              + epoch, 40)
  end function contribution

  subroutine fill(epoch)
    integer, intent(in) :: epoch
    integer :: i, j, k
    do concurrent (k = lbound(rho, 3):ubound(rho, 3), j = lbound(rho, 2):ubound(rho, 2), &
                   i = lbound(rho, 1):ubound(rho, 1))
      rho(i, j, k) = contribution(1, i, j, k, epoch)
    end do
    do concurrent (k = lbound(fx, 3):ubound(fx, 3), j = lbound(fx, 2):ubound(fx, 2), &
                   i = lbound(fx, 1):ubound(fx, 1))
      fx(i, j, k) = real(contribution(2, i, j, k, epoch), real32)
    end do
    do concurrent (k = lbound(flux, 3):ubound(flux, 3), j = lbound(flux, 2):ubound(flux, 2), &
                   i = lbound(flux, 1):ubound(flux, 1))
      flux(i, j, k) = contribution(3, i, j, k, epoch)
    end do
  end subroutine fill

  ! The global index of local point (i, j, k) (1-based) of field f held at
  ! depth (0: whole halo), or -1: not held or beyond an open boundary.
  integer function held(f, i, j, k, depth)
    integer, intent(in) :: f, i, j, k, depth
    integer :: p(3), g(3), n(3), axis, below, above
    p = [i, j, k] - 1
    held = -1
    do axis = 1, 3
      below = lo(axis, f)
      above = hi(axis, f)
      if (depth > 0) then
        below = min(below, depth)
        above = min(above, depth + merge(1, 0, staggered(locations(f), axis)))
      end if
      if (p(axis) < -below .or. p(axis) >= points(axis, f) + above) return
      n(axis) = global(axis)
      if (staggered(locations(f), axis) .and. .not. periodic(axis)) n(axis) = global(axis) + 1
      g(axis) = offset(axis) + p(axis)
      if (g(axis) < 0 .or. g(axis) >= n(axis)) then
        if (.not. periodic(axis)) return
        g(axis) = modulo(g(axis), n(axis))
      end if
    end do
    held = g(1) + 64 * (g(2) + 64 * g(3))
  end function held

  logical function owned(f, i, j, k)
    integer, intent(in) :: f, i, j, k
    owned = i >= 1 .and. i <= points(1, f) .and. j >= 1 .and. j <= points(2, f) .and. &
            k >= 1 .and. k <= points(3, f)
  end function owned

  subroutine check(op, depth, every, epoch, moved)
    integer, intent(in) :: op, depth, epoch
    logical, intent(in) :: every, moved(nfields)
    integer :: f, i, j, k, b(3, 2), count, total, expected, found, g, m, before
    integer, allocatable :: mine(:, :), all(:, :), counts(:), displs(:)
    do f = 1, nfields
      call bounds_of(f, b)
      ! This rank's copies before the call: (global index, value).
      allocate(mine(2, 0))
      do k = b(3, 1), b(3, 2)
        do j = b(2, 1), b(2, 2)
          do i = b(1, 1), b(1, 2)
            g = held(f, i, j, k, depth)
            if (g >= 0) mine = reshape([mine, [g, contribution(f, i, j, k, epoch)]], &
                                       [2, size(mine, 2) + 1])
          end do
        end do
      end do
      allocate(counts(ranks), displs(ranks))
      call MPI_Allgather(2 * size(mine, 2), 1, MPI_INTEGER, counts, 1, MPI_INTEGER, &
                         MPI_COMM_WORLD)
      displs(1) = 0
      do m = 2, ranks
        displs(m) = displs(m - 1) + counts(m - 1)
      end do
      total = sum(counts)
      allocate(all(2, total / 2))
      call MPI_Allgatherv(mine, 2 * size(mine, 2), MPI_INTEGER, all, counts, displs, &
                          MPI_INTEGER, MPI_COMM_WORLD)
      do k = b(3, 1), b(3, 2)
        do j = b(2, 1), b(2, 2)
          do i = b(1, 1), b(1, 2)
            before = contribution(f, i, j, k, epoch)
            expected = before
            g = held(f, i, j, k, depth)
            if (moved(f) .and. g >= 0 .and. (every .or. owned(f, i, j, k))) then
              count = 0
              do m = 1, size(all, 2)
                if (all(1, m) /= g) cycle
                count = count + 1
                if (count == 1) then
                  expected = all(2, m)
                else if (op == HALOX_SUM) then
                  expected = expected + all(2, m)
                else if (op == HALOX_MIN) then
                  expected = min(expected, all(2, m))
                else
                  expected = max(expected, all(2, m))
                end if
              end do
            end if
            select case (f)
            case (1)
              found = nint(rho(i, j, k))
            case (2)
              found = nint(fx(i, j, k))
            case default
              found = nint(flux(i, j, k))
            end select
            if (found /= expected) call fail("op " // trim(str(op)) // " depth " // &
              trim(str(depth)) // " field " // trim(str(f)) // " point " // trim(str(i)) // &
              "," // trim(str(j)) // "," // trim(str(k)) // ": expected " // &
              trim(str(expected)) // ", found " // trim(str(found)))
          end do
        end do
      end do
      deallocate(mine, all, counts, displs)
    end do
  end subroutine check

  subroutine bounds_of(f, b)
    integer, intent(in) :: f
    integer, intent(out) :: b(3, 2)
    select case (f)
    case (1)
      b(:, 1) = lbound(rho)
      b(:, 2) = ubound(rho)
    case (2)
      b(:, 1) = lbound(fx)
      b(:, 2) = ubound(fx)
    case default
      b(:, 1) = lbound(flux)
      b(:, 2) = ubound(flux)
    end select
  end subroutine bounds_of

end program reverse_fields
