! Fields as codes hold them, through the Fortran module, checked point by
! point: cell, node (CloverLeaf's extents, halos inferred from the bounds),
! face and edge fields (DMStag-like halos given per side), real32 and real64
! in one exchange (CloverLeaf's extents on every rank but the one at the high
! end of an open axis, which holds one more node and allocates one more,
! since the library takes the same widths on every rank); open and periodic
! boundaries; the whole exchange and
! subsets by index and by name at depths 1 and 2; a code's own x-fastest rank
! order adopted (CloverLeaf's chunk numbering); bad shapes and subsets refused
! on every rank. Exit status 1 on any failure.
!
! The checker derives each field's points per rank, the halo points a call
! fills and every point's value from its global index as halox/field.hpp
! states the conventions, without asking the library.
program staggered_fields
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real32, real64, error_unit
  implicit none
  integer, parameter :: global(3) = [8, 7, 6]
  integer, parameter :: nfields = 5

  type :: test_field
    character(len=16) :: name = ""
    integer :: location = HALOX_CELL
    logical :: single = .false.          ! real32
    logical :: inferred = .false.        ! halo inferred from the bounds
    integer :: lo(3) = 0, hi(3) = 0      ! halo in points
    integer :: points(3) = 0, offset(3) = 0, global_points(3) = 0
    real(real64), allocatable :: a64(:,:,:)
    real(real32), allocatable :: a32(:,:,:)
  end type test_field

  type(test_field), allocatable, target :: fields(:)
  type(halox_decomposition) :: decomp
  integer :: rank, ranks, failures, all_failures, dims(3)
  logical :: periodic(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)
  failures = 0
  allocate(fields(nfields))

  periodic = .true.
  call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=global, periodic=periodic)
  call check_calls(decomp, periodic, "periodic", failures)
  call kept_shared_faces(decomp, failures)
  call halox_decomposition_destroy(decomp)

  periodic = .false.
  call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=global, periodic=periodic)
  call check_calls(decomp, periodic, "open", failures)
  call bad_shapes(decomp, failures)
  call halox_decomposition_destroy(decomp)

  ! A code's own decomposition, its ranks numbered x fastest (CloverLeaf).
  dims = [ranks, 1, 1]
  if (ranks == 4) dims = [2, 2, 1]
  periodic = [.true., .false., .true.]
  call adopt_x_fastest(decomp, dims, periodic, "XYZ")
  call check_calls(decomp, periodic, "adopted XYZ", failures)
  call halox_decomposition_destroy(decomp)
  if (ranks == 4) call order_refused(dims, periodic, failures)

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print "(a, i0, a, i0)", "staggered_fields: ranks ", ranks, ", failures: ", &
    all_failures
  call MPI_Finalize()
  if (all_failures /= 0) error stop 1

contains

  subroutine fail(failures, what)
    integer, intent(inout) :: failures
    character(len=*), intent(in) :: what
    failures = failures + 1
    write(error_unit, "(a, i0, a, a)") "rank ", rank, ": ", what
  end subroutine fail

  function staggered_axes(location) result(s)
    integer, intent(in) :: location
    integer :: s(3)
    select case (location)
    case (HALOX_X_FACE)
      s = [1, 0, 0]
    case (HALOX_Y_FACE)
      s = [0, 1, 0]
    case (HALOX_Z_FACE)
      s = [0, 0, 1]
    case (HALOX_X_EDGE)
      s = [0, 1, 1]
    case (HALOX_Y_EDGE)
      s = [1, 0, 1]
    case (HALOX_Z_EDGE)
      s = [1, 1, 0]
    case (HALOX_VERTEX)
      s = [1, 1, 1]
    case default
      s = 0
    end select
  end function staggered_axes

  ! The fields on this rank: density (cell, CloverLeaf's x_min-2:x_max+2),
  ! xvel (node, x_min-2:x_max+3 on every rank), both inferred; vol_flux_x (x face) and
  ! edge_y (y edge) real32 with halos per side; an unnamed real32 cell field
  ! without a z halo.
  subroutine allocate_fields(decomp, periodic)
    type(halox_decomposition), intent(in) :: decomp
    logical, intent(in) :: periodic(3)
    integer :: extent(3), offset(3), f, k, s(3)
    call halox_subdomain(decomp, extent, offset)
    fields(1) = test_field(name="density", location=HALOX_CELL, inferred=.true.)
    fields(2) = test_field(name="xvel", location=HALOX_VERTEX, inferred=.true.)
    fields(3) = test_field(name="vol_flux_x", location=HALOX_X_FACE, single=.true., &
                           lo=[1, 1, 1], hi=[2, 2, 2])
    fields(4) = test_field(name="edge_y", location=HALOX_Y_EDGE, single=.true., &
                           lo=[1, 1, 2], hi=[1, 1, 1])
    fields(5) = test_field(location=HALOX_CELL, single=.true., lo=[1, 1, 0], hi=[1, 1, 0])
    do f = 1, nfields
      associate (t => fields(f))
        s = staggered_axes(t%location)
        do k = 1, 3
          t%points(k) = extent(k)
          t%global_points(k) = global(k)
          if (s(k) == 1 .and. .not. periodic(k)) then
            t%global_points(k) = global(k) + 1
            if (offset(k) + extent(k) == global(k)) t%points(k) = extent(k) + 1
          end if
          if (t%inferred) then   ! CloverLeaf's bounds: 2 cells each side, the same on every rank
            t%lo(k) = 2
            t%hi(k) = 2 + s(k)
            if (t%points(k) > extent(k)) t%hi(k) = t%hi(k) - 1   ! the last face held: x_max+3
          end if
        end do
        t%offset = offset
        if (t%single) then
          allocate(t%a32(1 - t%lo(1):t%points(1) + t%hi(1), 1 - t%lo(2):t%points(2) + t%hi(2), &
                         1 - t%lo(3):t%points(3) + t%hi(3)))
        else
          allocate(t%a64(1 - t%lo(1):t%points(1) + t%hi(1), 1 - t%lo(2):t%points(2) + t%hi(2), &
                         1 - t%lo(3):t%points(3) + t%hi(3)))
        end if
      end associate
    end do
  end subroutine allocate_fields

  subroutine create_exchange(ex, decomp, stat, errmsg)
    type(halox_exchange), intent(inout) :: ex
    type(halox_decomposition), intent(in) :: decomp
    integer, intent(out) :: stat
    character(len=*), intent(inout) :: errmsg
    call halox_exchange_create(ex, decomp, &
      [halox_field(fields(1)%a64, name="density"), &
       halox_field(fields(2)%a64, location=HALOX_VERTEX, name="xvel"), &
       halox_field(fields(3)%a32, location=HALOX_X_FACE, halo_lo=[1, 1, 1], halo_hi=[2, 2, 2], &
                   name="vol_flux_x"), &
       halox_field(fields(4)%a32, location=HALOX_Y_EDGE, halo_lo=[1, 1, 2], halo_hi=[1, 1, 1], &
                   name="edge_y"), &
       halox_field(fields(5)%a32, halo_lo=[1, 1, 0], halo_hi=[1, 1, 0])], stat=stat, errmsg=errmsg)
  end subroutine create_exchange

  ! A point's value: its field, its global index and the epoch, exact in real32.
  real(real64) function point_value(f, g, epoch)
    integer, intent(in) :: f, g(3), epoch
    point_value = 1 + f * 9000 + g(1) + 21 * g(2) + 441 * g(3) + epoch * 70000
  end function point_value

  ! Whether a call at depth (0: whole halo) fills local point p (0-based),
  ! and from which global point.
  logical function filled_from(t, periodic, depth, p, g)
    type(test_field), intent(in) :: t
    logical, intent(in) :: periodic(3)
    integer, intent(in) :: depth, p(3)
    integer, intent(out) :: g(3)
    integer :: k, lo, hi, s(3), outside
    s = staggered_axes(t%location)
    filled_from = .false.
    outside = 0
    g = 0
    do k = 1, 3
      lo = t%lo(k)
      hi = t%hi(k)
      if (depth > 0) then
        lo = min(lo, depth)
        hi = min(hi, depth + s(k))
      end if
      if (p(k) < -lo .or. p(k) >= t%points(k) + hi) return
      if (p(k) < 0 .or. p(k) >= t%points(k)) outside = outside + 1
      g(k) = t%offset(k) + p(k)
      if (g(k) < 0 .or. g(k) >= t%global_points(k)) then
        if (.not. periodic(k)) return   ! beyond an open boundary: nobody owns it
        g(k) = modulo(g(k), t%global_points(k))
      end if
    end do
    filled_from = outside > 0
  end function filled_from

  ! Interior points hold their values, halo points this rank's mark.
  subroutine fill(epoch)
    integer, intent(in) :: epoch
    integer :: f, i, j, k
    real(real64) :: v
    do f = 1, nfields
      associate (t => fields(f))
        do k = 1 - t%lo(3), t%points(3) + t%hi(3)
          do j = 1 - t%lo(2), t%points(2) + t%hi(2)
            do i = 1 - t%lo(1), t%points(1) + t%hi(1)
              v = -1 - rank
              if (all([i, j, k] >= 1 .and. [i, j, k] <= t%points)) &
                v = point_value(f, t%offset + [i, j, k] - 1, epoch)
              if (t%single) then
                t%a32(i, j, k) = real(v, real32)
              else
                t%a64(i, j, k) = v
              end if
            end do
          end do
        end do
      end associate
    end do
  end subroutine fill

  ! Every point of every field after a call on `subset` at `depth`.
  subroutine check(periodic, subset, depth, epoch, what, failures)
    logical, intent(in) :: periodic(3)
    integer, intent(in) :: subset(:), depth, epoch
    character(len=*), intent(in) :: what
    integer, intent(inout) :: failures
    integer :: f, i, j, k, g(3), wrong
    real(real64) :: want, have
    character(len=200) :: line
    do f = 1, nfields
      wrong = 0
      associate (t => fields(f))
        do k = 1 - t%lo(3), t%points(3) + t%hi(3)
          do j = 1 - t%lo(2), t%points(2) + t%hi(2)
            do i = 1 - t%lo(1), t%points(1) + t%hi(1)
              want = -1 - rank
              if (all([i, j, k] >= 1 .and. [i, j, k] <= t%points)) then
                want = point_value(f, t%offset + [i, j, k] - 1, epoch)
              else if (any(subset == f)) then
                if (filled_from(t, periodic, depth, [i, j, k] - 1, g)) &
                  want = point_value(f, g, epoch)
              end if
              if (t%single) then
                have = t%a32(i, j, k)
              else
                have = t%a64(i, j, k)
              end if
              if (have /= want) then
                if (wrong == 0) write(line, "(a, a, i0, a, 3i4, a, f9.0, a, f9.0)") what, &
                  ": field ", f, " point", [i, j, k], " holds", have, ", not", want
                wrong = wrong + 1
              end if
            end do
          end do
        end do
      end associate
      if (wrong > 0) call fail(failures, trim(line))
    end do
  end subroutine check

  ! The whole exchange, then subsets by index and by name at depths 1 and 2.
  subroutine check_calls(decomp, periodic, what, failures)
    type(halox_decomposition), intent(in) :: decomp
    logical, intent(in) :: periodic(3)
    character(len=*), intent(in) :: what
    integer, intent(inout) :: failures
    type(halox_exchange) :: ex
    integer :: stat
    character(len=256) :: msg
    call allocate_fields(decomp, periodic)
    call create_exchange(ex, decomp, stat, msg)
    if (stat /= HALOX_SUCCESS) then
      call fail(failures, what // ": " // trim(msg))
      call free_fields()
      return
    end if
    call fill(1)
    call halox_exchange_halos(ex)
    call check(periodic, [1, 2, 3, 4, 5], 0, 1, what // " whole", failures)
    call fill(2)
    call halox_exchange_halos(ex, fields=[1, 3], depth=1)
    call check(periodic, [1, 3], 1, 2, what // " fields 1,3 depth 1", failures)
    call fill(3)
    call halox_exchange_halos(ex, names=[character(len=16) :: "xvel", "edge_y", "density"], &
                              depth=2)
    call check(periodic, [2, 4, 1], 2, 3, what // " by name depth 2", failures)
    call fill(4)
    call halox_start(ex, fields=[2, 4, 5], depth=1)
    call halox_wait(ex)
    call check(periodic, [2, 4, 5], 1, 4, what // " start/wait 2,4,5 depth 1", failures)
    call fill(5)
    call halox_exchange_halos(ex, depth=1)
    call check(periodic, [1, 2, 3, 4, 5], 1, 5, what // " all depth 1", failures)
    call bad_subsets(ex, failures)
    call halox_exchange_destroy(ex)
    ! halo_lo=, halo_hi= of the exchange for a field with a location but no halo of its own
    call fill(6)
    call halox_exchange_create(ex, decomp, [halox_field(fields(3)%a32, location=HALOX_X_FACE)], &
                               halo_lo=[1, 1, 1], halo_hi=[2, 2, 2])
    call halox_exchange_halos(ex)
    call check(periodic, [3], 0, 6, what // " halo_lo=, halo_hi= of the exchange", failures)
    call halox_exchange_destroy(ex)
    call free_fields()
  end subroutine check_calls

  subroutine free_fields()
    integer :: f
    do f = 1, nfields
      if (allocated(fields(f)%a64)) deallocate(fields(f)%a64)
      if (allocated(fields(f)%a32)) deallocate(fields(f)%a32)
    end do
  end subroutine free_fields

  subroutine expect_usage_error(stat, msg, words, what, failures)
    integer, intent(in) :: stat
    character(len=*), intent(in) :: msg, words, what
    integer, intent(inout) :: failures
    if (stat /= HALOX_ERROR_USAGE .or. index(msg, words) == 0) &
      call fail(failures, what // " not refused as expected: " // trim(msg))
  end subroutine expect_usage_error

  subroutine bad_subsets(ex, failures)
    type(halox_exchange), intent(in) :: ex
    integer, intent(inout) :: failures
    integer :: stat
    character(len=256) :: msg
    msg = ""
    call halox_exchange_halos(ex, names=[character(len=8) :: "pressure"], stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "pressure", "an unknown name", failures)
    msg = ""
    call halox_exchange_halos(ex, fields=[6], depth=1, stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "fields= takes 1 to 5", "field 6 of 5", failures)
    msg = ""
    call halox_start(ex, fields=[1], names=[character(len=8) :: "xvel"], stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "give one of fields=, names= and mask=", "fields= and names=", failures)
  end subroutine bad_subsets

  ! shared="kept": the node face shared with the rank above keeps this rank's
  ! value, the point beyond it comes from the rank above (MPI_Dims_create puts
  ! at least two ranks along x when there are two or more).
  subroutine kept_shared_faces(decomp, failures)
    type(halox_decomposition), intent(in) :: decomp
    integer, intent(inout) :: failures
    type(halox_exchange) :: ex
    integer :: n(3), y, z, stat
    character(len=256) :: msg
    real(real64), allocatable, target :: nodes(:,:,:), moved(:,:,:), short(:,:,:)
    call halox_subdomain(decomp, n)
    allocate(nodes(0:n(1) + 2, 0:n(2) + 2, 0:n(3) + 2), source=real(rank + 1, real64))
    call halox_exchange_create(ex, decomp, [halox_field(nodes, location=HALOX_VERTEX, &
                               name="xvel", shared="kept")])
    call halox_exchange_halos(ex, algorithm="staged")   ! a call's own algorithm
    y = 1 + n(2) / 2
    z = 1 + n(3) / 2
    if (nodes(n(1) + 1, y, z) /= rank + 1) call fail(failures, "kept: the shared face moved")
    if (ranks > 1 .and. nodes(n(1) + 2, y, z) == rank + 1) &
      call fail(failures, "kept: the point beyond the shared face did not move")
    ! New memory for the field (a code that re-allocates): the new array moves, the old one
    ! stays as it was; an array of another shape is refused.
    allocate(moved, mold=nodes)
    moved = -1
    nodes = rank + 1
    moved(:, y, z) = rank + 1
    call halox_exchange_set_field_data(ex, 1, moved)
    call halox_exchange_halos(ex)
    if (any(nodes /= rank + 1)) call fail(failures, "set_field_data: the old array was written")
    if (ranks > 1 .and. moved(n(1) + 2, y, z) == rank + 1) &
      call fail(failures, "set_field_data: the new array did not move")
    if (moved(n(1) + 1, y, z) /= rank + 1) call fail(failures, "set_field_data: the face moved")
    allocate(short(0:n(1) + 1, 0:n(2) + 2, 0:n(3) + 2))
    msg = ""
    call halox_exchange_set_field_data(ex, 1, short, stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "halox_exchange_set_field_data: the 1st field's new " // &
                            "array is real64", "a shorter array", failures)
    msg = ""
    call halox_exchange_set_field_data(ex, 2, moved, stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "field 2 is not one of the exchange's 1 fields", &
                            "field 2 of 1", failures)
    msg = ""
    call halox_start(ex, algorithm="diagonal", stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "halox_start: unknown algorithm 'diagonal'", &
                            "algorithm=""diagonal""", failures)
    call halox_exchange_destroy(ex)
    msg = ""
    call halox_exchange_create(ex, decomp, [halox_field(nodes, location=HALOX_VERTEX, &
                               shared="mine")], stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "shared= takes", "shared=""mine""", failures)
  end subroutine kept_shared_faces

  ! Shapes that do not fit their location fail on every rank with one message.
  subroutine bad_shapes(decomp, failures)
    type(halox_decomposition), intent(in) :: decomp
    integer, intent(inout) :: failures
    type(halox_exchange) :: ex
    integer :: extent(3), stat
    character(len=256) :: msg
    real(real64), allocatable, target :: cells(:,:,:), nodes(:,:,:)
    call halox_subdomain(decomp, extent)
    allocate(cells(-1:extent(1) + 2, -1:extent(2) + 2, -1:extent(3) + 2))
    ! Cell bounds called a node: the inferred halo would reach 1 node less above.
    msg = ""
    call halox_exchange_create(ex, decomp, [halox_field(cells, location=HALOX_VERTEX, &
                               name="xvel")], stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "field 'xvel' (vertex) has bounds -1:", &
                            "cell bounds inferred as a node", failures)
    ! Given halos: the rank at the open high end holds one more x face.
    msg = ""
    call halox_exchange_create(ex, decomp, [halox_field(cells, name="density"), &
                               halox_field(cells, location=HALOX_X_FACE, halo=2, &
                               name="xflux")], stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "field 'xflux'", "cell shape given as an x face", &
                            failures)
    ! CloverLeaf's nodes x_min-2:x_max+3 on every rank: accepted, the last
    ! rank of an open axis one point less above; one point less again is not.
    allocate(nodes(-1:extent(1) + 3, -1:extent(2) + 3, -1:extent(3) + 3))
    msg = ""
    call halox_exchange_create(ex, decomp, [halox_field(nodes, location=HALOX_VERTEX, &
                               name="xvel")], stat=stat, errmsg=msg)
    if (stat /= HALOX_SUCCESS) call fail(failures, "CloverLeaf's nodes: " // trim(msg))
    if (stat == HALOX_SUCCESS) call halox_exchange_destroy(ex)
    deallocate(nodes)
    allocate(nodes(-1:extent(1) + 2, -1:extent(2) + 3, -1:extent(3) + 3))
    msg = ""
    call halox_exchange_create(ex, decomp, [halox_field(nodes, location=HALOX_VERTEX, &
                               name="xvel")], stat=stat, errmsg=msg)
    call expect_usage_error(stat, msg, "field 'xvel' (vertex) has bounds -1:", &
                            "node bounds one short above", failures)
    msg = ""
    call halox_exchange_create(ex, decomp, [halox_field(cells, location=9)], stat=stat, &
                               errmsg=msg)
    call expect_usage_error(stat, msg, "location=", "location 9", failures)
  end subroutine bad_shapes

  ! A code's own split (the remainder one cell each over the first chunks)
  ! with its ranks numbered x fastest, as CloverLeaf numbers its chunks.
  subroutine adopt_x_fastest(decomp, dims, periodic, order)
    type(halox_decomposition), intent(inout) :: decomp
    integer, intent(in) :: dims(3)
    logical, intent(in) :: periodic(3)
    character(len=*), intent(in) :: order
    integer :: coords(3), offset(3), extent(3), k, have_extent(3), have_offset(3)
    coords = [mod(rank, dims(1)), mod(rank / dims(1), dims(2)), rank / (dims(1) * dims(2))]
    do k = 1, 3
      extent(k) = global(k) / dims(k) + merge(1, 0, coords(k) < mod(global(k), dims(k)))
      offset(k) = coords(k) * (global(k) / dims(k)) + min(coords(k), mod(global(k), dims(k)))
    end do
    call halox_decomposition_adopt(decomp, MPI_COMM_WORLD, global, dims, periodic, &
                                   order=order, offset=offset, extent=extent)
    call halox_subdomain(decomp, have_extent, have_offset)
    if (any(have_extent /= extent) .or. any(have_offset /= offset)) &
      call fail(failures, "the adopted sub-domain is not the code's own")
  end subroutine adopt_x_fastest

  ! x-fastest sub-domains declared as z fastest do not tile: refused on every rank.
  subroutine order_refused(dims, periodic, failures)
    integer, intent(in) :: dims(3)
    logical, intent(in) :: periodic(3)
    integer, intent(inout) :: failures
    type(halox_decomposition) :: wrong
    integer :: coords(3), offset(3), extent(3), k, stat
    character(len=512) :: msg
    coords = [mod(rank, dims(1)), mod(rank / dims(1), dims(2)), rank / (dims(1) * dims(2))]
    do k = 1, 3
      extent(k) = global(k) / dims(k) + merge(1, 0, coords(k) < mod(global(k), dims(k)))
      offset(k) = coords(k) * (global(k) / dims(k)) + min(coords(k), mod(global(k), dims(k)))
    end do
    msg = ""
    call halox_decomposition_adopt(wrong, MPI_COMM_WORLD, global, dims, periodic, order="ZYX", &
                                   offset=offset, extent=extent, stat=stat, errmsg=msg)
    if (index(msg, 'order="XYZ"') == 0 .or. index(msg, "rank_order::parse") /= 0) &
      call fail(failures, "the order advice is not in Fortran's words: " // trim(msg))
    call expect_usage_error(stat, msg, "do not tile", "x-fastest chunks as ZYX", &
                            failures)
  end subroutine order_refused

end program staggered_fields
