! The time of an exchange called from Fortran (`use halox`), measured as
! halox-bench measures its summary: back-to-back exchanges after a warm-up,
! each timed on every rank, the median of the slowest rank.
!
!   mpiexec -n 2 halox-fortran-exchange-time [N] [halo] [fields] [nrep] [transport] [algorithm] [grouping]
!
! N^3 interior cells per rank (a rank grid from MPI_Dims_create, periodic),
! real64 fields; defaults 64 1 1 1000 mpi-p2p standard compact. Prints
! "fortran h<halo>f<fields> <transport>/<algorithm>/<grouping> median <us> us".
program fortran_exchange_time
  use mpi_f08
  use halox
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none
  type :: real64_field
    real(real64), allocatable :: cells(:,:,:)
  end type real64_field
  type(real64_field), allocatable, target :: storage(:)
  type(halox_field), allocatable :: fields(:)
  type(halox_decomposition) :: decomp
  type(halox_exchange) :: ex
  integer :: n, halo, nfields, nrep, extent(3), offset(3), dims(3), ranks, f, rep
  character(len=64) :: transport, algorithm, grouping
  real(real64), allocatable :: times(:)
  real(real64) :: median, slowest, t0

  call MPI_Init()
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)
  n = integer_argument(1, 64)
  halo = integer_argument(2, 1)
  nfields = integer_argument(3, 1)
  nrep = integer_argument(4, 1000)
  call text_argument(5, "mpi-p2p", transport)
  call text_argument(6, "standard", algorithm)
  call text_argument(7, "compact", grouping)
  dims = 0
  call MPI_Dims_create(ranks, 3, dims)
  call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=n * dims)
  call halox_subdomain(decomp, extent, offset)
  allocate(storage(nfields), fields(nfields))
  do f = 1, nfields
    allocate(storage(f)%cells(1 - halo:extent(1) + halo, 1 - halo:extent(2) + halo, &
                              1 - halo:extent(3) + halo), source=real(f, real64))
    fields(f) = halox_field(storage(f)%cells)
  end do
  call halox_exchange_create(ex, decomp, fields, halo=halo, transport=trim(transport), &
                             algorithm=trim(algorithm), grouping=trim(grouping))
  do rep = 1, 10
    call halox_exchange_halos(ex)
  end do
  allocate(times(nrep))
  do rep = 1, nrep
    t0 = MPI_Wtime()
    call halox_exchange_halos(ex)
    times(rep) = MPI_Wtime() - t0
  end do
  median = median_of(times)
  call MPI_Allreduce(median, slowest, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  if (offset(1) == 0 .and. offset(2) == 0 .and. offset(3) == 0) &
    print "(a, i0, a, i0, 1x, a, a, a, a, a, a, f10.2, a)", "fortran h", halo, "f", nfields, &
      trim(transport), "/", trim(algorithm), "/", trim(grouping), " median ", slowest * 1e6, " us"
  call halox_exchange_destroy(ex)
  call halox_decomposition_destroy(decomp)
  call MPI_Finalize()

contains

  integer function integer_argument(index, default) result(value)
    integer, intent(in) :: index, default
    character(len=32) :: text
    value = default
    if (command_argument_count() < index) return
    call get_command_argument(index, text)
    read(text, *) value
  end function integer_argument

  subroutine text_argument(index, default, value)
    integer, intent(in) :: index
    character(len=*), intent(in) :: default
    character(len=*), intent(out) :: value
    value = default
    if (command_argument_count() >= index) call get_command_argument(index, value)
  end subroutine text_argument

  real(real64) function median_of(values) result(median)
    real(real64), intent(in) :: values(:)
    real(real64) :: sorted(size(values)), swap
    integer :: i, j
    sorted = values
    do i = 2, size(sorted)  ! insertion sort: a few thousand values
      swap = sorted(i)
      j = i - 1
      do while (j >= 1)
        if (sorted(j) <= swap) exit
        sorted(j + 1) = sorted(j)
        j = j - 1
      end do
      sorted(j + 1) = swap
    end do
    median = sorted((size(sorted) + 1) / 2)
  end function median_of

end program fortran_exchange_time
