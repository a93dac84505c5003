! A Fortran stencil code using halox, the twin of heat3d.cpp: explicit 7-point
! heat diffusion on a periodic global grid, the exchange overlapped with the
! interior update.
!
!   mpiexec -n 4 halox-example-heat3d-fortran [global N] [steps] [transport] [output file]
!
! Prints a checksum of the final field; with an output file, rank 0 writes the
! whole final field there (N^3 doubles, x fastest), the same bytes on any
! number of ranks.
program heat3d
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none
  real(real64), parameter :: alpha = 0.1_real64, pi = acos(-1.0_real64)
  real(real64), allocatable, target :: u(:,:,:), next(:,:,:)
  real(real64), allocatable :: sin_x(:), cos_y(:), sin_z(:)
  type(halox_decomposition) :: decomp
  type(halox_exchange) :: exchange_u, exchange_next
  integer :: n, steps, step, extent(3), offset(3), rank, i, j, k
  character(len=64) :: argument, transport
  character(len=1024) :: output

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  n = 24
  steps = 20
  transport = "mpi-p2p"
  output = ""
  if (command_argument_count() >= 1) then
    call get_command_argument(1, argument)
    read(argument, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, argument)
    read(argument, *) steps
  end if
  if (command_argument_count() >= 3) call get_command_argument(3, transport)
  if (command_argument_count() >= 4) call get_command_argument(4, output)

  call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=[n, n, n])
  call halox_subdomain(decomp, extent, offset)
  ! Interior 1..extent, one halo cell on every side.
  allocate(u(0:extent(1) + 1, 0:extent(2) + 1, 0:extent(3) + 1), source=0.0_real64)
  allocate(next, mold=u)
  next = 0

  ! A smooth initial condition, a function of the global cell only. The
  ! sines come from tables over the whole grid, the same loop on every rank:
  ! a vectorised sin may differ from a scalar one in the last bit.
  allocate(sin_x(0:n - 1), cos_y(0:n - 1), sin_z(0:n - 1))
  do i = 0, n - 1
    sin_x(i) = sin(2 * pi * i / n)
    cos_y(i) = cos(2 * pi * i / n)
    sin_z(i) = 0.5_real64 * sin(4 * pi * i / n)
  end do
  do k = 1, extent(3)
    do j = 1, extent(2)
      do i = 1, extent(1)
        u(i, j, k) = sin_x(offset(1) + i - 1) * cos_y(offset(2) + j - 1) + sin_z(offset(3) + k - 1)
      end do
    end do
  end do

  ! Faces are all a 7-point stencil needs; two exchanges swap roles each step.
  call halox_exchange_create(exchange_u, decomp, [halox_field(u)], halo=1, &
                             transport=trim(transport), algorithm="faces", grouping="compact")
  call halox_exchange_create(exchange_next, decomp, [halox_field(next)], halo=1, &
                             transport=trim(transport), algorithm="faces", grouping="compact")
  do step = 0, steps - 1
    if (mod(step, 2) == 0) then
      call advance(u, next, exchange_u)
    else
      call advance(next, u, exchange_next)
    end if
  end do

  if (mod(steps, 2) == 0) then
    call report(u)
  else
    call report(next)
  end if
  call halox_exchange_destroy(exchange_u)
  call halox_exchange_destroy(exchange_next)
  call halox_decomposition_destroy(decomp)
  call MPI_Finalize()

contains

  ! One step: the cells that need no halo while the exchange is in flight,
  ! the boundary shell once it is complete.
  subroutine advance(from, to, exchange)
    real(real64), intent(inout) :: from(0:, 0:, 0:)
    real(real64), intent(inout) :: to(0:, 0:, 0:)
    type(halox_exchange), intent(in) :: exchange
    call halox_start(exchange)
    call update(from, to, 2, extent - 1, .false.)
    call halox_wait(exchange)
    call update(from, to, 1, extent, .true.)
  end subroutine advance

  subroutine update(from, to, first, last, shell_only)
    real(real64), intent(in) :: from(0:, 0:, 0:)
    real(real64), intent(inout) :: to(0:, 0:, 0:)
    integer, intent(in) :: first, last(3)
    logical, intent(in) :: shell_only
    integer :: i, j, k
    do k = first, last(3)
      do j = first, last(2)
        do i = first, last(1)
          if (shell_only .and. i > 1 .and. j > 1 .and. k > 1 .and. i < extent(1) .and. &
              j < extent(2) .and. k < extent(3)) cycle
          to(i, j, k) = from(i, j, k) + alpha * (from(i + 1, j, k) + from(i - 1, j, k) + &
                        from(i, j + 1, k) + from(i, j - 1, k) + from(i, j, k + 1) + &
                        from(i, j, k - 1) - 6 * from(i, j, k))
        end do
      end do
    end do
  end subroutine update

  ! The global field on rank 0 (every cell from the one rank that owns it,
  ! added to zeros: exact), its checksum, and the file when asked for.
  subroutine report(field)
    real(real64), intent(in) :: field(0:, 0:, 0:)
    real(real64), allocatable :: mine(:,:,:), whole(:,:,:)
    integer :: unit
    allocate(mine(n, n, n), source=0.0_real64)
    allocate(whole(n, n, n))
    mine(offset(1) + 1:offset(1) + extent(1), offset(2) + 1:offset(2) + extent(2), &
         offset(3) + 1:offset(3) + extent(3)) = field(1:extent(1), 1:extent(2), 1:extent(3))
    call MPI_Reduce(mine, whole, n**3, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
    if (rank /= 0) return
    print "(a, i0, a, i0, a, es17.10, a, es17.10)", "heat3d n=", n, " steps=", steps, &
      " sum=", sum(whole), " norm2=", sum(whole**2)
    if (len_trim(output) > 0) then
      open(newunit=unit, file=trim(output), access="stream", form="unformatted", &
           status="replace")
      write(unit) whole
      close(unit)
    end if
  end subroutine report

end program heat3d
