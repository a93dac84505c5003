! A code that adds into its halos, through the `halox` module: the Fortran twin
! of nodal3d.cpp. Each element adds a force into its 8 nodes (LULESH's shape:
! every rank holds the nodes of its elements, the shared face above in a halo
! one point deep); the forces are summed on every rank that holds a node
! (LULESH's CommSBN); the nodes move; particles deposit charge into the 8
! nearest cell centres, some into guard cells, which are summed into their
! owners (a particle-in-cell code's guard-cell sum).
!
!   nodal3d N steps open|periodic [transport [algorithm]] [exchange=halox|lulesh]
!
! exchange=lulesh (anywhere among the arguments) is the same app with its
! exchanges written the way LULESH's lulesh-comm.cc writes them, the baseline:
! a message per neighbour (up to 26), every field's boundary points packed,
! MPI_Isend/MPI_Irecv, unpacked by adding (or, for the owners' positions and
! velocities, by copying).
!
! Rank 0 prints the global sums of the final displacement and charge, and an
! order-independent digest of every owned value's bits: the digest is the
! same for every transport and algorithm (every holder computes each total
! in one fixed order); the sums agree with one rank's to rounding, and so do
! the LULESH-style run's (its holders add in different orders).
program nodal3d
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real64, int64, error_unit
  implicit none
  ! What the LULESH-style exchange sends toward a neighbour, and how a message is unpacked.
  integer, parameter :: nodes_shared = 1, nodes_from_owner = 2, guard_cells = 3
  integer, parameter :: packing = 1, adding = 2, copying = 3

  ! An array the LULESH-style exchange moves points of, with its own bounds.
  type :: field_ref
    real(real64), pointer :: a(:,:,:) => null()
  end type field_ref

  ! One message of the LULESH-style exchange: every field's points in box
  ! (first and last index per axis), one field after another.
  type :: message
    integer :: peer, tag, box(2, 3)
    real(real64), allocatable :: buffer(:)
  end type message

  real(real64), allocatable, target :: ux(:,:,:), vx(:,:,:), fx(:,:,:), mass(:,:,:), rho(:,:,:)
  type(halox_decomposition) :: decomp
  type(halox_exchange) :: ex
  integer :: n, steps, rank, extent(3), offset(3), nodes(3), step, i, j, k, c, a(3), axis
  logical :: periodic(3), lulesh
  character(len=64) :: transport, algorithm
  type(MPI_Comm) :: cart
  integer :: neighbour(0:26)   ! by direction (x fastest, 13 this rank); MPI_PROC_NULL: none
  real(real64) :: pull, mean, k_el, q, w(3), at(3), sums(2)
  integer(int64) :: digest(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call read_arguments()

  call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=[n, n, n], periodic=periodic)
  call halox_subdomain(decomp, extent, offset)
  nodes = extent
  do k = 1, 3
    if (.not. periodic(k) .and. offset(k) + extent(k) == n) nodes(k) = extent(k) + 1
  end do
  ! Nodes 1..nodes owned, the shared face above at extent+1 (halo 0 below, 1 above).
  allocate(ux(nodes(1) + 1, nodes(2) + 1, nodes(3) + 1), source=0.0_real64)
  allocate(vx, fx, mass, source=ux)   ! at rest, no force yet
  allocate(rho(0:extent(1) + 1, 0:extent(2) + 1, 0:extent(3) + 1), source=0.0_real64)
  if (lulesh) then
    call find_neighbours()
  else
    call halox_exchange_create(ex, decomp, &
      [halox_field(ux, location=HALOX_VERTEX, halo_lo=[0, 0, 0], halo_hi=[1, 1, 1], name="ux"), &
       halox_field(vx, location=HALOX_VERTEX, halo_lo=[0, 0, 0], halo_hi=[1, 1, 1], name="vx"), &
       halox_field(fx, location=HALOX_VERTEX, halo_lo=[0, 0, 0], halo_hi=[1, 1, 1], name="fx"), &
       halox_field(mass, location=HALOX_VERTEX, halo_lo=[0, 0, 0], halo_hi=[1, 1, 1], &
                   name="mass"), &
       halox_field(rho, halo=1, name="rho")], &
      transport=trim(transport), algorithm=trim(algorithm))
  end if

  ! Every node held starts from its global index alone.
  do k = 1, extent(3) + 1
    do j = 1, extent(2) + 1
      do i = 1, extent(1) + 1
        ux(i, j, k) = 0.02_real64 * (unit(node_id(i, j, k) * 7) - 0.5_real64)
      end do
    end do
  end do
  mass = 1   ! a point nobody holds (above the last node of an open axis) keeps 1
  mass(1:extent(1) + 1, 1:extent(2) + 1, 1:extent(3) + 1) = 0
  do k = 1, extent(3)
    do j = 1, extent(2)
      do i = 1, extent(1)
        do c = 0, 7
          a = [i, j, k] + [iand(c, 1), iand(ishft(c, -1), 1), ishft(c, -2)]
          mass(a(1), a(2), a(3)) = mass(a(1), a(2), a(3)) + (1 + unit(cell_id(i, j, k) * 3 + 1)) / 8
        end do
      end do
    end do
  end do
  call sum_mass_on_holders()

  do step = 1, steps
    fx = 0
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          k_el = 1 + unit(cell_id(i, j, k) * 3 + 2)
          mean = sum(ux(i:i + 1, j:j + 1, k:k + 1)) / 8
          do c = 0, 7
            a = [i, j, k] + [iand(c, 1), iand(ishft(c, -1), 1), ishft(c, -2)]
            pull = mean - ux(a(1), a(2), a(3))
            fx(a(1), a(2), a(3)) = fx(a(1), a(2), a(3)) + k_el * pull * (1 + 50 * pull * pull)
          end do
        end do
      end do
    end do
    call sum_forces_on_holders()
    vx = vx + 0.05_real64 * fx / mass
    ux = ux + 0.05_real64 * vx
    call copy_motion_from_owners()
    ! Particles: two per cell, deposited cloud-in-cell; the guard cells summed back.
    rho = 0
    do k = 1, extent(3)
      do j = 1, extent(2)
        do i = 1, extent(1)
          do c = 0, 1
            q = 0.5_real64 + unit((cell_id(i, j, k) * 16 + c + 1000003_int64 * step) * 4)
            at = [i, j, k] - 0.5_real64
            do axis = 1, 3
              at(axis) = at(axis) + unit((cell_id(i, j, k) * 16 + c + 1000003_int64 * step) &
                                         * 4 + axis)
            end do
            w = at - floor(at)
            call deposit(floor(at), w, q)
          end do
        end do
      end do
    end do
    call sum_charge_into_owners()
  end do

  sums(1) = sum(ux(1:nodes(1), 1:nodes(2), 1:nodes(3)))
  sums(2) = sum(rho(1:extent(1), 1:extent(2), 1:extent(3)))
  digest(1) = owned_digest(ux(1:nodes(1), 1:nodes(2), 1:nodes(3)), 1)
  digest(2) = owned_digest(rho(1:extent(1), 1:extent(2), 1:extent(3)), 0)
  call MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Allreduce(MPI_IN_PLACE, digest, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) write(*, "(a, es23.15, es23.15, a, z16.16, 1x, z16.16)") &
    "nodal3d: sums", sums, " digest ", digest
  if (lulesh) then
    call MPI_Comm_free(cart)
  else
    call halox_exchange_destroy(ex)
  end if
  call halox_decomposition_destroy(decomp)
  call MPI_Finalize()

contains

  ! Positional N steps open|periodic [transport [algorithm]], as before the
  ! keyword existed; exchange= may come anywhere.
  subroutine read_arguments()
    character(len=*), parameter :: exchange_key = "exchange="
    character(len=64) :: arg, exchange
    integer :: i, position
    n = 12
    steps = 4
    periodic = .false.
    transport = "mpi-p2p"
    algorithm = "standard"
    exchange = "halox"
    position = 0
    do i = 1, command_argument_count()
      call get_command_argument(i, arg)
      if (index(arg, exchange_key) == 1) then
        exchange = arg(len(exchange_key) + 1:)
        cycle
      end if
      position = position + 1
      select case (position)
      case (1)
        read(arg, *) n
      case (2)
        read(arg, *) steps
      case (3)
        periodic = trim(arg) == "periodic"
      case (4)
        transport = arg
      case (5)
        algorithm = arg
      end select
    end do
    lulesh = exchange == "lulesh"
    if (.not. lulesh .and. exchange /= "halox") then
      if (rank == 0) write(error_unit, "(a)") "halox-example-nodal3d-fortran: error: " // &
        "exchange must be halox or lulesh, not '" // trim(exchange) // "'"
      call MPI_Finalize()
      stop 2, quiet=.true.
    end if
  end subroutine read_arguments

  ! ---- The app's exchanges: through halox, or the way LULESH's are written

  ! LULESH's CommSBN for the masses: every holder of a node gets the same total.
  subroutine sum_mass_on_holders()
    if (lulesh) then
      call lulesh_exchange([field_ref(mass)], nodes_shared, adding)
    else
      call halox_reverse(ex, names=["mass"], every_holder=.true.)
    end if
  end subroutine sum_mass_on_holders

  ! LULESH's CommSBN: every holder of a node gets the same total.
  subroutine sum_forces_on_holders()
    if (lulesh) then
      call lulesh_exchange([field_ref(fx)], nodes_shared, adding)
    else
      call halox_reverse(ex, op=HALOX_SUM, names=["fx"], every_holder=.true.)
    end if
  end subroutine sum_forces_on_holders

  ! LULESH's CommSyncPosVel: the owners' values to every copy.
  subroutine copy_motion_from_owners()
    if (lulesh) then
      call lulesh_exchange([field_ref(ux), field_ref(vx)], nodes_from_owner, copying)
    else
      call halox_exchange_halos(ex, names=["ux", "vx"])
    end if
  end subroutine copy_motion_from_owners

  ! The guard cells' charge summed into the cells' owners.
  subroutine sum_charge_into_owners()
    if (lulesh) then
      call lulesh_exchange([field_ref(rho)], guard_cells, adding)
    else
      call halox_reverse(ex, names=["rho"])
    end if
  end subroutine sum_charge_into_owners

  ! The ranks around this one on the grid halox_decomposition_create builds
  ! (MPI_Dims_create, then MPI_Cart_create without reordering: the same ranks
  ! at the same coordinates), none past an open boundary.
  subroutine find_neighbours()
    integer :: ranks, dims(3), coords(3), at(3), dir
    call MPI_Comm_size(MPI_COMM_WORLD, ranks)
    dims = 0
    call MPI_Dims_create(ranks, 3, dims)
    call MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periodic, .false., cart)
    call MPI_Cart_coords(cart, rank, 3, coords)
    ! The packed boxes assume halox's cells on this rank: its split of the grid.
    if (any(offset /= coords * (n / dims) + min(coords, mod(n, dims)))) &
      error stop "nodal3d: the Cartesian grid is not the decomposition's"
    do dir = 0, 26
      at = coords + [mod(dir, 3), mod(dir / 3, 3), dir / 9] - 1
      neighbour(dir) = MPI_PROC_NULL
      ! MPI_Cart_rank wraps a periodic axis.
      if (dir /= 13 .and. all(periodic .or. (at >= 0 .and. at < dims))) &
        call MPI_Cart_rank(cart, at, neighbour(dir))
    end do
  end subroutine find_neighbours

  ! LULESH's way: a message per neighbour, every field's points toward it
  ! packed one after another, MPI_Isend/MPI_Irecv, each received box added
  ! into (unpack adding) or copied over (copying) the points it lands on.
  subroutine lulesh_exchange(fields, region, unpack)
    type(field_ref), intent(in) :: fields(:)   ! the arrays change, not the references
    integer, intent(in) :: region, unpack
    type(message), asynchronous :: sends(26), receives(26)
    type(MPI_Request) :: requests(52)
    integer :: dir, axis, direction(3), send_box(2, 3), receive_box(2, 3), sent, received, m
    sent = 0
    received = 0
    do dir = 0, 26
      if (neighbour(dir) == MPI_PROC_NULL) cycle
      direction = [mod(dir, 3), mod(dir / 3, 3), dir / 9] - 1
      do axis = 1, 3
        call lulesh_spans(region, extent(axis), nodes(axis), direction(axis), &
                          send_box(:, axis), receive_box(:, axis))
      end do
      ! The tag is the direction of travel: a rank that is its own neighbour,
      ! or a neighbour on two sides, matches each message to its box.
      call add_message(sends, sent, neighbour(dir), dir, send_box, size(fields))
      call add_message(receives, received, neighbour(dir), 26 - dir, receive_box, size(fields))
    end do
    do m = 1, received
      call MPI_Irecv(receives(m)%buffer, size(receives(m)%buffer), MPI_DOUBLE_PRECISION, &
                     receives(m)%peer, receives(m)%tag, cart, requests(m))
    end do
    do m = 1, sent
      call move_box(fields, sends(m)%box, sends(m)%buffer, packing)
      call MPI_Isend(sends(m)%buffer, size(sends(m)%buffer), MPI_DOUBLE_PRECISION, &
                     sends(m)%peer, sends(m)%tag, cart, requests(received + m))
    end do
    call MPI_Waitall(received + sent, requests, MPI_STATUSES_IGNORE)
    do m = 1, received
      call move_box(fields, receives(m)%box, receives(m)%buffer, unpack)
    end do
  end subroutine lulesh_exchange

  ! Along one axis, the points (first, last) sent toward the neighbour in
  ! direction dir (-1, 0, 1) and those its message lands on: `cells` cells,
  ! `owned` nodes (cells + 1 at an open high end). Index 1 is the first point
  ! held, cells + 1 the shared node above, 0 the guard cell below.
  subroutine lulesh_spans(region, cells, owned, dir, send, receive)
    integer, intent(in) :: region, cells, owned, dir
    integer, intent(out) :: send(2), receive(2)
    integer, parameter :: nothing(2) = [1, 0]
    select case (region)
    case (nodes_shared)   ! the nodes on the face toward the neighbour, held by both
      send = by_side(dir, [1, 1], [1, cells + 1], [cells + 1, cells + 1])
      receive = send
    case (nodes_from_owner)   ! owners send their first face down; the copies above take it
      send = by_side(dir, [1, 1], [1, owned], nothing)
      receive = by_side(dir, nothing, [1, owned], [cells + 1, cells + 1])
    case (guard_cells)   ! guard cells to their owner, added into its edge cells
      send = by_side(dir, [0, 0], [1, cells], [cells + 1, cells + 1])
      receive = by_side(dir, [1, 1], [1, cells], [cells, cells])
    end select
  end subroutine lulesh_spans

  pure function by_side(dir, below, along, above) result(span)
    integer, intent(in) :: dir, below(2), along(2), above(2)
    integer :: span(2)
    if (dir < 0) then
      span = below
    else if (dir > 0) then
      span = above
    else
      span = along
    end if
  end function by_side

  ! A message of every field's points in box, unless the box is empty.
  subroutine add_message(list, count, peer, tag, box, fields)
    type(message), intent(inout) :: list(:)
    integer, intent(inout) :: count
    integer, intent(in) :: peer, tag, box(2, 3), fields
    if (any(box(2, :) < box(1, :))) return
    count = count + 1
    list(count)%peer = peer
    list(count)%tag = tag
    list(count)%box = box
    allocate(list(count)%buffer(product(box(2, :) - box(1, :) + 1) * fields))
  end subroutine add_message

  ! Every field's points in box, one field after another, x fastest: into
  ! buffer (packing), or from it, added to the points (adding) or over them.
  subroutine move_box(fields, box, buffer, mode)
    type(field_ref), intent(in) :: fields(:)
    integer, intent(in) :: box(2, 3), mode
    real(real64), intent(inout) :: buffer(:)
    real(real64), pointer :: points(:,:,:)
    integer :: f, at, length
    at = 0
    do f = 1, size(fields)
      points => fields(f)%a(box(1, 1):box(2, 1), box(1, 2):box(2, 2), box(1, 3):box(2, 3))
      length = size(points)
      select case (mode)
      case (packing)
        buffer(at + 1:at + length) = reshape(points, [length])
      case (adding)
        points = points + reshape(buffer(at + 1:at + length), shape(points))
      case (copying)
        points = reshape(buffer(at + 1:at + length), shape(points))
      end select
      at = at + length
    end do
  end subroutine move_box

  ! Global index of local node (i, j, k) (1-based), wrapped where periodic.
  integer(int64) function node_id(i, j, k)
    integer, intent(in) :: i, j, k
    node_id = global_id([i, j, k], 1)
  end function node_id

  integer(int64) function cell_id(i, j, k)
    integer, intent(in) :: i, j, k
    cell_id = global_id([i, j, k], 0)
  end function cell_id

  ! The sum over the owned points u (1-based) of each value's bits mixed with
  ! its global id (extra: 1 for nodes, 0 for cells, as global_id).
  integer(int64) function owned_digest(u, extra)
    real(real64), intent(in) :: u(:,:,:)
    integer, intent(in) :: extra
    integer :: i, j, k
    owned_digest = 0
    do k = 1, size(u, 3)
      do j = 1, size(u, 2)
        do i = 1, size(u, 1)
          owned_digest = owned_digest + mix(ieor(transfer(u(i, j, k), 0_int64), &
                                                 global_id([i, j, k], extra)))
        end do
      end do
    end do
  end function owned_digest

  integer(int64) function global_id(p, extra)
    integer, intent(in) :: p(3), extra
    integer :: g(3), m, axis
    do axis = 1, 3
      m = n + merge(0, extra, periodic(axis))
      g(axis) = modulo(offset(axis) + p(axis) - 1, m)
    end do
    global_id = g(1) + 4096_int64 * (g(2) + 4096_int64 * g(3))
  end function global_id

  ! A bijective 64-bit mix (splitmix64's finaliser), wrapping arithmetic.
  integer(int64) function mix(x)
    integer(int64), intent(in) :: x
    integer(int64) :: z
    z = ieor(x, ishft(x, -33))
    z = z * (-49064778989728563_int64)
    z = ieor(z, ishft(z, -33))
    z = z * (-4265267296055464877_int64)
    mix = ieor(z, ishft(z, -33))
  end function mix

  real(real64) function unit(x)
    integer(int64), intent(in) :: x
    unit = real(ishft(mix(x), -11), real64) * 2.0_real64**(-53)
  end function unit

  ! A charge q at base + w (cell-centre units) into the 8 nearest cells.
  subroutine deposit(base, w, q)
    integer, intent(in) :: base(3)
    real(real64), intent(in) :: w(3), q
    integer :: c, d(3)
    do c = 0, 7
      d = [iand(c, 1), iand(ishft(c, -1), 1), ishft(c, -2)]
      rho(base(1) + d(1), base(2) + d(2), base(3) + d(3)) = &
        rho(base(1) + d(1), base(2) + d(2), base(3) + d(3)) + &
        q * product(merge(w, 1 - w, d == 1))
    end do
  end subroutine deposit

end program nodal3d
