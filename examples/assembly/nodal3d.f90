! A code that adds into its halos, through the `halox` module: the Fortran twin
! of nodal3d.cpp. Each element adds a force into its 8 nodes (LULESH's shape:
! every rank holds the nodes of its elements, the shared face above in a halo
! one point deep); the forces are summed on every rank that holds a node
! (LULESH's CommSBN); the nodes move; particles deposit charge into the 8
! nearest cell centres, some into guard cells, which are summed into their
! owners (a particle-in-cell code's guard-cell sum).
!
!   nodal3d N steps open|periodic [transport [algorithm]]
!
! Rank 0 prints the global sums of the final displacement and charge, and an
! order-independent digest of every owned value's bits: the digest is the
! same for every transport and algorithm (every holder computes each total
! in one fixed order); the sums agree with one rank's to rounding.
program nodal3d
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real64, int64
  implicit none
  real(real64), allocatable, target :: ux(:,:,:), vx(:,:,:), fx(:,:,:), mass(:,:,:), rho(:,:,:)
  type(halox_decomposition) :: decomp
  type(halox_exchange) :: ex
  integer :: n, steps, rank, extent(3), offset(3), nodes(3), step, i, j, k, c, a(3), axis
  logical :: periodic(3)
  character(len=32) :: arg, transport, algorithm
  real(real64) :: pull, mean, k_el, q, w(3), at(3), sums(2)
  integer(int64) :: digest(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  n = 12
  steps = 4
  periodic = .false.
  transport = "mpi-p2p"
  algorithm = "standard"
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read(arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read(arg, *) steps
  end if
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    periodic = trim(arg) == "periodic"
  end if
  if (command_argument_count() >= 4) call get_command_argument(4, transport)
  if (command_argument_count() >= 5) call get_command_argument(5, algorithm)

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
  call halox_exchange_create(ex, decomp, &
    [halox_field(ux, location=HALOX_NODE, halo=[0, 1, 0, 1, 0, 1], name="ux"), &
     halox_field(vx, location=HALOX_NODE, halo=[0, 1, 0, 1, 0, 1], name="vx"), &
     halox_field(fx, location=HALOX_NODE, halo=[0, 1, 0, 1, 0, 1], name="fx"), &
     halox_field(mass, location=HALOX_NODE, halo=[0, 1, 0, 1, 0, 1], name="mass"), &
     halox_field(rho, halo=[1, 1, 1, 1, 1, 1], name="rho")], &
    transport=trim(transport), algorithm=trim(algorithm))

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
  call halox_reverse(ex, names=["mass"], every_holder=.true.)

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
    ! LULESH's CommSBN: every holder of a node gets the same total.
    call halox_reverse(ex, op=HALOX_SUM, names=["fx"], every_holder=.true.)
    vx = vx + 0.05_real64 * fx / mass
    ux = ux + 0.05_real64 * vx
    ! LULESH's CommSyncPosVel: the owners' values to every copy.
    call halox_exchange_halos(ex, names=["ux", "vx"])
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
    call halox_reverse(ex, names=["rho"])
  end do

  sums(1) = sum(ux(1:nodes(1), 1:nodes(2), 1:nodes(3)))
  sums(2) = sum(rho(1:extent(1), 1:extent(2), 1:extent(3)))
  digest = 0
  do k = 1, nodes(3)
    do j = 1, nodes(2)
      do i = 1, nodes(1)
        digest(1) = digest(1) + mix(ieor(transfer(ux(i, j, k), 0_int64), node_id(i, j, k)))
      end do
    end do
  end do
  do k = 1, extent(3)
    do j = 1, extent(2)
      do i = 1, extent(1)
        digest(2) = digest(2) + mix(ieor(transfer(rho(i, j, k), 0_int64), cell_id(i, j, k)))
      end do
    end do
  end do
  call MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Allreduce(MPI_IN_PLACE, digest, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) write(*, "(a, es23.15, es23.15, a, z16.16, 1x, z16.16)") &
    "nodal3d: sums", sums, " digest ", digest
  call halox_exchange_destroy(ex)
  call halox_decomposition_destroy(decomp)
  call MPI_Finalize()

contains

  ! Global index of local node (i, j, k) (1-based), wrapped where periodic.
  integer(int64) function node_id(i, j, k)
    integer, intent(in) :: i, j, k
    node_id = global_id([i, j, k], 1)
  end function node_id

  integer(int64) function cell_id(i, j, k)
    integer, intent(in) :: i, j, k
    cell_id = global_id([i, j, k], 0)
  end function cell_id

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
