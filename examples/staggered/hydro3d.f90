! A staggered-grid hydro step in the shape of CloverLeaf's (cells for density,
! energy and pressure, nodes for the velocities, faces for the mass fluxes,
! each allocated with CloverLeaf's extents), with the halo exchanges of
! CloverLeaf's update_halo: a different subset of fields at a different depth
! before each kernel. The physics is small (a pressure kick on the nodes,
! second-order upwind advection of mass and energy through the faces); what it
! shows is the halos each kernel reads, filled at the depth it reads them.
!
!   hydro3d N steps open|periodic [halox|cloverleaf]
!
! halox: the exchanges through the `halox` module, subsets by name and by
! index. cloverleaf: the same exchanges written as CloverLeaf writes them,
! each field packed per face, MPI_Isend/MPI_Irecv, unpacked; left/right, then
! bottom/top extended by the x halos, then back/front extended by both.
! Rank 0 prints an exact, order-independent digest of every owned point (sums
! of the values' bit patterns): the same on any number of ranks, either way.
program hydro3d
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real32, real64, int64
  implicit none
  real(real64), parameter :: gamma = 1.4_real64, dt = 0.05_real64
  integer, parameter :: nfields = 9
  character(len=16), parameter :: names(nfields) = [character(len=16) :: "density", "energy", &
    "pressure", "xvel", "yvel", "zvel", "mass_flux_x", "mass_flux_y", "mass_flux_z"]

  ! A field as the CloverLeaf-style exchange sees it.
  type :: field_ref
    real(real64), pointer :: a64(:,:,:) => null()
    real(real32), pointer :: a32(:,:,:) => null()
    integer :: staggered(3) = 0
  end type field_ref

  ! CloverLeaf's extents on every rank: cells x_min-2:x_max+2, nodes and faces
  ! x_min-2:x_max+3 along their staggered axes (the rank holding the last node
  ! of an open axis has one point less above it, where nobody writes).
  real(real64), allocatable, target :: density(:,:,:), energy(:,:,:), pressure(:,:,:)
  real(real64), allocatable, target :: xvel(:,:,:), yvel(:,:,:), zvel(:,:,:)
  real(real32), allocatable, target :: mass_flux_x(:,:,:), mass_flux_y(:,:,:), mass_flux_z(:,:,:)
  type(field_ref) :: refs(nfields)
  type(halox_decomposition) :: decomp
  type(halox_exchange) :: ex
  type(MPI_Comm) :: comm
  integer :: n, steps, step, rank, ranks, dims(3), coords(3), offset(3), extent(3), nodes(3)
  integer :: neighbours(2, 3)
  logical :: periodic(3), baseline
  character(len=32) :: argument

  call MPI_Init()
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank)
  call MPI_Comm_size(comm, ranks)
  call read_arguments()
  call chunk_decomposition()
  call allocate_fields()
  call initial_state()
  if (.not. baseline) then
    call halox_decomposition_adopt(decomp, comm, [n, n, n], dims, periodic, order="XYZ", &
                                   offset=offset, extent=extent)
    call halox_exchange_create(ex, decomp, [ &
      halox_field(density, name="density"), halox_field(energy, name="energy"), &
      halox_field(pressure, name="pressure"), &
      halox_field(xvel, location=HALOX_VERTEX, name="xvel"), &
      halox_field(yvel, location=HALOX_VERTEX, name="yvel"), &
      halox_field(zvel, location=HALOX_VERTEX, name="zvel"), &
      halox_field(mass_flux_x, location=HALOX_X_FACE, name="mass_flux_x"), &
      halox_field(mass_flux_y, location=HALOX_Y_FACE, name="mass_flux_y"), &
      halox_field(mass_flux_z, location=HALOX_Z_FACE, name="mass_flux_z")])
  end if
  do step = 1, steps
    call hydro_step()
  end do
  call print_digest()
  if (.not. baseline) then
    call halox_exchange_destroy(ex)
    call halox_decomposition_destroy(decomp)
  end if
  call MPI_Finalize()

contains

  subroutine read_arguments()
    n = 12
    steps = 4
    periodic = .false.
    baseline = .false.
    call get_command_argument(1, argument)
    if (len_trim(argument) > 0) read(argument, *) n
    call get_command_argument(2, argument)
    if (len_trim(argument) > 0) read(argument, *) steps
    call get_command_argument(3, argument)
    if (argument == "periodic") periodic = .true.
    call get_command_argument(4, argument)
    baseline = argument == "cloverleaf"
  end subroutine read_arguments

  ! CloverLeaf's chunks: numbered x fastest, the remainder one cell each over
  ! the first chunks of a dimension.
  subroutine chunk_decomposition()
    integer :: k, up(3)
    dims = 0
    call MPI_Dims_create(ranks, 3, dims)
    coords = [mod(rank, dims(1)), mod(rank / dims(1), dims(2)), rank / (dims(1) * dims(2))]
    do k = 1, 3
      extent(k) = n / dims(k) + merge(1, 0, coords(k) < mod(n, dims(k)))
      offset(k) = coords(k) * (n / dims(k)) + min(coords(k), mod(n, dims(k)))
      nodes(k) = extent(k)
      if (.not. periodic(k) .and. offset(k) + extent(k) == n) nodes(k) = extent(k) + 1
      neighbours(:, k) = MPI_PROC_NULL
      up = 0
      up(k) = 1
      if (periodic(k) .or. coords(k) > 0) neighbours(1, k) = chunk_at(coords - up)
      if (periodic(k) .or. coords(k) < dims(k) - 1) neighbours(2, k) = chunk_at(coords + up)
    end do
  end subroutine chunk_decomposition

  integer function chunk_at(c)
    integer, intent(in) :: c(3)
    integer :: w(3)
    w = modulo(c, dims)
    chunk_at = w(1) + dims(1) * (w(2) + dims(2) * w(3))
  end function chunk_at

  subroutine allocate_fields()
    integer :: c(3)
    c = extent
    allocate(density(-1:c(1) + 2, -1:c(2) + 2, -1:c(3) + 2), source=0.0_real64)
    allocate(energy, pressure, mold=density)
    allocate(xvel(-1:c(1) + 3, -1:c(2) + 3, -1:c(3) + 3), source=0.0_real64)
    allocate(yvel, zvel, mold=xvel)
    allocate(mass_flux_x(-1:c(1) + 3, -1:c(2) + 2, -1:c(3) + 2), source=0.0_real32)
    allocate(mass_flux_y(-1:c(1) + 2, -1:c(2) + 3, -1:c(3) + 2), source=0.0_real32)
    allocate(mass_flux_z(-1:c(1) + 2, -1:c(2) + 2, -1:c(3) + 3), source=0.0_real32)
    energy = 0            ! mold= allocates without a value
    pressure = 0
    yvel = 0
    zvel = 0
    refs(1)%a64 => density
    refs(2)%a64 => energy
    refs(3)%a64 => pressure
    refs(4) = field_ref(a64=xvel, staggered=[1, 1, 1])
    refs(5) = field_ref(a64=yvel, staggered=[1, 1, 1])
    refs(6) = field_ref(a64=zvel, staggered=[1, 1, 1])
    refs(7) = field_ref(a32=mass_flux_x, staggered=[1, 0, 0])
    refs(8) = field_ref(a32=mass_flux_y, staggered=[0, 1, 0])
    refs(9) = field_ref(a32=mass_flux_z, staggered=[0, 0, 1])
  end subroutine allocate_fields

  ! Exact values from global indices, the same whatever the decomposition.
  subroutine initial_state()
    integer :: i, j, k, g(3)
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          g = offset + [i, j, k] - 1
          density(i, j, k) = 1 + 0.5_real64 * mod(7 * g(1) + 3 * g(2) + 5 * g(3), 11) / 11
          energy(i, j, k) = 2 + mod(g(1) + 2 * g(2) + 3 * g(3), 7) / 7.0_real64
        end do
      end do
    end do
  end subroutine initial_state

  ! The exchanges before each kernel, as CloverLeaf's update_halo calls them.
  subroutine hydro_step()
    ! advection reads density and energy 2 cells out
    call exchange(names=[character(len=16) :: "density", "energy"], depth=2)
    call reflect_walls()
    call ideal_gas()
    call exchange(names=[character(len=16) :: "pressure"], depth=1)
    call accelerate()
    call exchange(fields=[4, 5, 6], depth=1)          ! xvel, yvel, zvel
    call mass_fluxes()
    call exchange(fields=[7, 8, 9], depth=1)          ! the faces above the last cell
    call advect()
  end subroutine hydro_step

  subroutine exchange(fields, names, depth)
    integer, intent(in), optional :: fields(:)
    character(len=*), intent(in), optional :: names(:)
    integer, intent(in) :: depth
    integer :: ids(nfields), count, f
    if (.not. baseline) then
      call halox_exchange_halos(ex, fields=fields, names=names, depth=depth)
      return
    end if
    if (present(fields)) then
      count = size(fields)
      ids(1:count) = fields
    else
      count = size(names)
      do f = 1, count
        ids(f) = findloc(names(f) == names_table(), .true., dim=1)
      end do
    end if
    call cloverleaf_update_halo(ids(1:count), depth)
  end subroutine exchange

  function names_table() result(table)
    character(len=16) :: table(nfields)
    table = names
  end function names_table

  ! Open boundaries are walls: the two cells beyond mirror the two inside
  ! (what CloverLeaf's update_halo does for the physical boundaries).
  subroutine reflect_walls()
    integer :: m
    do m = 1, 2
      if (.not. periodic(1) .and. coords(1) == 0) then
        density(1 - m, :, :) = density(m, :, :)
        energy(1 - m, :, :) = energy(m, :, :)
      end if
      if (.not. periodic(1) .and. coords(1) == dims(1) - 1) then
        density(extent(1) + m, :, :) = density(extent(1) + 1 - m, :, :)
        energy(extent(1) + m, :, :) = energy(extent(1) + 1 - m, :, :)
      end if
      if (.not. periodic(2) .and. coords(2) == 0) then
        density(:, 1 - m, :) = density(:, m, :)
        energy(:, 1 - m, :) = energy(:, m, :)
      end if
      if (.not. periodic(2) .and. coords(2) == dims(2) - 1) then
        density(:, extent(2) + m, :) = density(:, extent(2) + 1 - m, :)
        energy(:, extent(2) + m, :) = energy(:, extent(2) + 1 - m, :)
      end if
      if (.not. periodic(3) .and. coords(3) == 0) then
        density(:, :, 1 - m) = density(:, :, m)
        energy(:, :, 1 - m) = energy(:, :, m)
      end if
      if (.not. periodic(3) .and. coords(3) == dims(3) - 1) then
        density(:, :, extent(3) + m) = density(:, :, extent(3) + 1 - m)
        energy(:, :, extent(3) + m) = energy(:, :, extent(3) + 1 - m)
      end if
    end do
  end subroutine reflect_walls

  subroutine ideal_gas()
    integer :: i, j, k
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          pressure(i, j, k) = (gamma - 1) * density(i, j, k) * energy(i, j, k)
        end do
      end do
    end do
  end subroutine ideal_gas

  ! A node on an open boundary is a wall: it does not move.
  logical function on_wall(i, j, k)
    integer, intent(in) :: i, j, k
    integer :: g(3), d
    g = offset + [i, j, k] - 1
    on_wall = .false.
    do d = 1, 3
      if (.not. periodic(d) .and. (g(d) == 0 .or. g(d) == n)) on_wall = .true.
    end do
  end function on_wall

  ! The pressure gradient over the 8 cells around each owned node (1 cell
  ! below in every direction: the corners of the pressure halo too).
  subroutine accelerate()
    integer :: i, j, k
    real(real64) :: mass, dpdx, dpdy, dpdz
    do k = 1, nodes(3)
      do j = 1, nodes(2)
        do i = 1, nodes(1)
          if (on_wall(i, j, k)) cycle
          mass = 0.125_real64 * (((density(i - 1, j - 1, k - 1) + density(i, j - 1, k - 1)) + &
                                  (density(i - 1, j, k - 1) + density(i, j, k - 1))) + &
                                 ((density(i - 1, j - 1, k) + density(i, j - 1, k)) + &
                                  (density(i - 1, j, k) + density(i, j, k))))
          dpdx = 0.25_real64 * (sum(pressure(i, j - 1:j, k - 1:k)) - &
                                sum(pressure(i - 1, j - 1:j, k - 1:k)))
          dpdy = 0.25_real64 * (sum(pressure(i - 1:i, j, k - 1:k)) - &
                                sum(pressure(i - 1:i, j - 1, k - 1:k)))
          dpdz = 0.25_real64 * (sum(pressure(i - 1:i, j - 1:j, k)) - &
                                sum(pressure(i - 1:i, j - 1:j, k - 1)))
          xvel(i, j, k) = xvel(i, j, k) - dt * dpdx / mass
          yvel(i, j, k) = yvel(i, j, k) - dt * dpdy / mass
          zvel(i, j, k) = zvel(i, j, k) - dt * dpdz / mass
        end do
      end do
    end do
  end subroutine accelerate

  real(real64) function minmod(a, b)
    real(real64), intent(in) :: a, b
    minmod = 0
    if (a * b > 0) minmod = sign(min(abs(a), abs(b)), a)
  end function minmod

  ! Second-order upwind value at the face between cells (below: m2, m1; above: p0, p1).
  real(real64) function face_value(u, m2, m1, p0, p1)
    real(real64), intent(in) :: u, m2, m1, p0, p1
    if (u > 0) then
      face_value = m1 + 0.5_real64 * minmod(m1 - m2, p0 - m1)
    else
      face_value = p0 - 0.5_real64 * minmod(p1 - p0, p0 - m1)
    end if
  end function face_value

  ! On the faces this rank owns: the face's velocity from its 4 nodes (the
  ! node halo 1 above), the density 2 cells below and 1 above.
  subroutine mass_fluxes()
    integer :: i, j, k
    real(real64) :: u
    mass_flux_x = 0
    mass_flux_y = 0
    mass_flux_z = 0
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, nodes(1)
          u = 0.25_real64 * ((xvel(i, j, k) + xvel(i, j + 1, k)) + &
                             (xvel(i, j, k + 1) + xvel(i, j + 1, k + 1)))
          if (u /= 0) mass_flux_x(i, j, k) = real(dt * u * face_value(u, density(i - 2, j, k), &
            density(i - 1, j, k), density(i, j, k), density(i + 1, j, k)), real32)
        end do
      end do
    end do
    do k = 1, extent(3)
      do j = 1, nodes(2)
        do i = 1, extent(1)
          u = 0.25_real64 * ((yvel(i, j, k) + yvel(i + 1, j, k)) + &
                             (yvel(i, j, k + 1) + yvel(i + 1, j, k + 1)))
          if (u /= 0) mass_flux_y(i, j, k) = real(dt * u * face_value(u, density(i, j - 2, k), &
            density(i, j - 1, k), density(i, j, k), density(i, j + 1, k)), real32)
        end do
      end do
    end do
    do k = 1, nodes(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          u = 0.25_real64 * ((zvel(i, j, k) + zvel(i + 1, j, k)) + &
                             (zvel(i, j + 1, k) + zvel(i + 1, j + 1, k)))
          if (u /= 0) mass_flux_z(i, j, k) = real(dt * u * face_value(u, density(i, j, k - 2), &
            density(i, j, k - 1), density(i, j, k), density(i, j, k + 1)), real32)
        end do
      end do
    end do
  end subroutine mass_fluxes

  ! The energy a face carries: the upwind cell's.
  real(real64) function carried(flux, below, above)
    real(real32), intent(in) :: flux
    real(real64), intent(in) :: below, above
    carried = flux * merge(below, above, flux > 0)
  end function carried

  ! Into new arrays: every cell reads its neighbours' energy before the step.
  subroutine advect()
    integer :: i, j, k
    real(real64) :: mass, internal
    real(real64), allocatable :: new_density(:,:,:), new_energy(:,:,:)
    allocate(new_density(extent(1), extent(2), extent(3)), new_energy(extent(1), extent(2), extent(3)))
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          mass = density(i, j, k) - &
            (((real(mass_flux_x(i + 1, j, k), real64) - mass_flux_x(i, j, k)) + &
              (real(mass_flux_y(i, j + 1, k), real64) - mass_flux_y(i, j, k))) + &
             (real(mass_flux_z(i, j, k + 1), real64) - mass_flux_z(i, j, k)))
          internal = density(i, j, k) * energy(i, j, k) - &
            (((carried(mass_flux_x(i + 1, j, k), energy(i, j, k), energy(i + 1, j, k)) - &
               carried(mass_flux_x(i, j, k), energy(i - 1, j, k), energy(i, j, k))) + &
              (carried(mass_flux_y(i, j + 1, k), energy(i, j, k), energy(i, j + 1, k)) - &
               carried(mass_flux_y(i, j, k), energy(i, j - 1, k), energy(i, j, k)))) + &
             (carried(mass_flux_z(i, j, k + 1), energy(i, j, k), energy(i, j, k + 1)) - &
              carried(mass_flux_z(i, j, k), energy(i, j, k - 1), energy(i, j, k))))
          new_density(i, j, k) = mass
          new_energy(i, j, k) = internal / mass
        end do
      end do
    end do
    density(1:extent(1), 1:extent(2), 1:extent(3)) = new_density
    energy(1:extent(1), 1:extent(2), 1:extent(3)) = new_energy
  end subroutine advect

  ! ---- The exchange as CloverLeaf writes it (update_halo, one field at a time)

  subroutine cloverleaf_update_halo(ids, depth)
    integer, intent(in) :: ids(:), depth
    integer :: f, axis
    do axis = 1, 3
      do f = 1, size(ids)
        call exchange_axis(refs(ids(f)), axis, depth)
      end do
    end do
  end subroutine cloverleaf_update_halo

  ! The box of points [lo, hi] of a field sent or received along `axis`: the
  ! earlier axes extended by their halos, the later ones interior only.
  subroutine axis_box(ref, axis, depth, side, sending, lo, hi)
    type(field_ref), intent(in) :: ref
    integer, intent(in) :: axis, depth, side
    logical, intent(in) :: sending
    integer, intent(out) :: lo(3), hi(3)
    integer :: d, points(3)
    points = merge(nodes, extent, ref%staggered == 1)
    do d = 1, 3
      lo(d) = 1
      hi(d) = points(d)
      if (d < axis) then
        lo(d) = 1 - depth
        hi(d) = points(d) + depth + ref%staggered(d)
      end if
    end do
    ! side 1: the neighbour below (its high halo: depth points, one more on
    ! a staggered axis, the shared face), side 2: the neighbour above.
    if (side == 1 .and. sending) then
      lo(axis) = 1
      hi(axis) = depth + ref%staggered(axis)
    else if (side == 1) then
      lo(axis) = 1 - depth
      hi(axis) = 0
    else if (sending) then
      lo(axis) = points(axis) - depth + 1
      hi(axis) = points(axis)
    else
      lo(axis) = points(axis) + 1
      hi(axis) = points(axis) + depth + ref%staggered(axis)
    end if
  end subroutine axis_box

  subroutine exchange_axis(ref, axis, depth)
    type(field_ref), intent(inout) :: ref
    integer, intent(in) :: axis, depth
    real(real64), allocatable :: send(:, :), receive(:, :)
    type(MPI_Request) :: requests(4)
    integer :: side, lo(3), hi(3), length(2), biggest
    biggest = 0
    do side = 1, 2
      call axis_box(ref, axis, depth, side, .false., lo, hi)
      length(side) = product(hi - lo + 1)
      biggest = max(biggest, length(side))
    end do
    allocate(send(biggest, 2), receive(biggest, 2))
    do side = 1, 2
      call axis_box(ref, axis, depth, side, .true., lo, hi)
      if (neighbours(side, axis) /= MPI_PROC_NULL) call copy_box(ref, lo, hi, send(:, side), .true.)
      ! tag: the direction of travel, so that a rank its own neighbour matches
      call MPI_Irecv(receive(:, side), length(side), MPI_DOUBLE_PRECISION, &
                     neighbours(side, axis), 3 - side, comm, requests(side))
      call MPI_Isend(send(:, side), length(3 - side), MPI_DOUBLE_PRECISION, &
                     neighbours(side, axis), side, comm, requests(2 + side))
    end do
    call MPI_Waitall(4, requests, MPI_STATUSES_IGNORE)
    do side = 1, 2
      call axis_box(ref, axis, depth, side, .false., lo, hi)
      if (neighbours(side, axis) /= MPI_PROC_NULL) &
        call copy_box(ref, lo, hi, receive(:, side), .false.)
    end do
  end subroutine exchange_axis

  ! The box [lo, hi] of a field into buffer (to_buffer), or from buffer into
  ! the box, in Fortran order (x fastest).
  subroutine copy_box(ref, lo, hi, buffer, to_buffer)
    type(field_ref), intent(in) :: ref
    integer, intent(in) :: lo(3), hi(3)
    real(real64), intent(inout) :: buffer(:)
    logical, intent(in) :: to_buffer
    integer :: n
    n = product(hi - lo + 1)
    if (to_buffer .and. associated(ref%a64)) then
      buffer(1:n) = reshape(ref%a64(lo(1):hi(1), lo(2):hi(2), lo(3):hi(3)), [n])
    else if (to_buffer) then
      buffer(1:n) = reshape(real(ref%a32(lo(1):hi(1), lo(2):hi(2), lo(3):hi(3)), real64), [n])
    else if (associated(ref%a64)) then
      ref%a64(lo(1):hi(1), lo(2):hi(2), lo(3):hi(3)) = reshape(buffer(1:n), hi - lo + 1)
    else
      ref%a32(lo(1):hi(1), lo(2):hi(2), lo(3):hi(3)) = real(reshape(buffer(1:n), hi - lo + 1), &
                                                            real32)
    end if
  end subroutine copy_box

  ! ---- The digest: per field, the sums of the low and high 32 bits of every
  ! owned point's value, exact and independent of the order of addition.

  subroutine add_bits(value, sums)
    real(real64), intent(in) :: value
    integer(int64), intent(inout) :: sums(2)
    integer(int64) :: bits
    bits = transfer(value, bits)
    sums(1) = sums(1) + iand(bits, int(z'FFFFFFFF', int64))
    sums(2) = sums(2) + ishft(bits, -32)
  end subroutine add_bits

  subroutine print_digest()
    integer(int64) :: sums(2, 5), total(2, 5)
    integer :: i, j, k, f
    character(len=8), parameter :: digested(5) = [character(len=8) :: "density", "energy", &
                                                   "xvel", "yvel", "zvel"]
    sums = 0
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          call add_bits(density(i, j, k), sums(:, 1))
          call add_bits(energy(i, j, k), sums(:, 2))
        end do
      end do
    end do
    do k = 1, nodes(3)
      do j = 1, nodes(2)
        do i = 1, nodes(1)
          call add_bits(xvel(i, j, k), sums(:, 3))
          call add_bits(yvel(i, j, k), sums(:, 4))
          call add_bits(zvel(i, j, k), sums(:, 5))
        end do
      end do
    end do
    call MPI_Reduce(sums, total, size(sums), MPI_INTEGER8, MPI_SUM, 0, comm)
    if (rank /= 0) return
    write(*, "(a, i0, a, i0, a, a, a, 3(i0, :, 'x'))", advance="no") "hydro3d n=", n, &
      " steps=", steps, " boundary=", trim(merge("periodic", "open    ", periodic(1))), " dims=", dims
    do f = 1, 5
      write(*, "(1x, a, '=', z0, ':', z0)", advance="no") trim(digested(f)), total(:, f)
    end do
    write(*, *)
  end subroutine print_digest

end program hydro3d
