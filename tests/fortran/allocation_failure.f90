! The Fortran module's create calls under memory pressure: an allocation
! failure put at each allocation of the call in turn (tests/support/
! failing_new.h). Each time the call gives stat = HALOX_ERROR_ALLOCATION and
! the message of the C call it reached ("<name>: out of memory", so the
! case proves which call that was), leaves its object unmade (destroying it
! is a usage error) and frees what it allocated; with no failure left to
! put, it succeeds. One rank. Exit status 1 on any failure.
program allocation_failure
  use mpi_f08
  use halox
  use, intrinsic :: iso_c_binding, only: c_long
  use, intrinsic :: iso_fortran_env, only: real32, real64, error_unit
  implicit none
  interface
    subroutine failing_new_arm(n) bind(C, name="failing_new_arm")
      import :: c_long
      integer(c_long), value :: n
    end subroutine
    integer(c_long) function failing_new_failures() bind(C, name="failing_new_failures")
      import :: c_long
    end function
    integer(c_long) function failing_new_live() bind(C, name="failing_new_live")
      import :: c_long
    end function
  end interface
  integer, parameter :: global(3) = [8, 8, 8]
  real(real64), target :: u64(10, 10, 10), v64(10, 10, 10)
  real(real32), target :: u32(10, 10, 10)
  type(halox_decomposition) :: decomp
  integer :: failures

  call MPI_Init()
  failures = 0
  call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=global)
  call each_allocation_fails(1, "halox_decomposition_create")
  call each_allocation_fails(2, "halox_decomposition_create")
  call each_allocation_fails(3, "halox_exchange_create")
  call each_allocation_fails(4, "halox_exchange_create")
  call each_allocation_fails(5, "halox_decomposition_adopt")
  call each_allocation_fails(6, "halox_exchange_create")
  call halox_decomposition_destroy(decomp)
  call MPI_Finalize()
  if (failures > 0) error stop 1

contains

  ! Create call `which` with stat= and errmsg=; what it made is destroyed.
  ! 1, 2: halox_decomposition_create_f (an MPI_Comm, an integer); 3, 4:
  ! halox_exchange_create (real64, real32); 5: halox_decomposition_adopt_f;
  ! 6: halox_exchange_create of fields of their own halo, location, name. The
  ! exchanges are made by halox_exchange_create_fields, whose messages the
  ! module gives the name of its own halox_exchange_create.
  ! made: the object was there to destroy.
  subroutine create(which, stat, errmsg, made)
    integer, intent(in) :: which
    integer, intent(out) :: stat
    character(len=*), intent(inout) :: errmsg
    logical, intent(out) :: made
    type(halox_decomposition) :: d
    type(halox_exchange) :: ex
    integer :: destroyed
    select case (which)
    case (1)
      call halox_decomposition_create(d, MPI_COMM_WORLD, global=global, stat=stat, errmsg=errmsg)
    case (2)
      call halox_decomposition_create(d, MPI_COMM_WORLD%MPI_VAL, global=global, stat=stat, &
                                      errmsg=errmsg)
    case (3)
      call halox_exchange_create(ex, decomp, [halox_field(u64), halox_field(v64)], halo=1, &
                                 transport="mpi-p2p", stat=stat, errmsg=errmsg)
    case (4)
      call halox_exchange_create(ex, decomp, [halox_field(u32)], halo=1, transport="mpi-p2p", &
                                 stat=stat, errmsg=errmsg)
    case (5)
      call halox_decomposition_adopt(d, MPI_COMM_WORLD, global=global, dims=[1, 1, 1], &
                                     periodic=[.true., .false., .true.], order="XYZ", &
                                     offset=[0, 0, 0], extent=global, stat=stat, errmsg=errmsg)
    case default
      call halox_exchange_create(ex, decomp, [halox_field(u64, name="u"), &
                                 halox_field(v64, location=HALOX_CELL, halo=1, name="v")], &
                                 halo=1, transport="mpi-p2p", stat=stat, errmsg=errmsg)
    end select
    if (which <= 2 .or. which == 5) then
      call halox_decomposition_destroy(d, stat=destroyed)
    else
      call halox_exchange_destroy(ex, stat=destroyed)
    end if
    made = destroyed == HALOX_SUCCESS
    if (.not. made .and. destroyed /= HALOX_ERROR_USAGE) then
      write (error_unit, '(a, i0)') "destroy gave ", destroyed
      failures = failures + 1
    end if
  end subroutine create

  subroutine each_allocation_fails(which, name)
    integer, intent(in) :: which
    character(len=*), intent(in) :: name
    character(len=512) :: errmsg
    integer :: stat
    integer(c_long) :: n, live, injected
    logical :: made
    errmsg = ""
    call create(which, stat, errmsg, made)  ! what the library sets up on first use
    n = 0
    do
      live = failing_new_live()
      call failing_new_arm(n)
      call create(which, stat, errmsg, made)
      injected = failing_new_failures()
      call failing_new_arm(-1_c_long)
      if (injected == 0) then
        if (stat /= HALOX_SUCCESS .or. .not. made) then
          write (error_unit, '(a, ": ", i0, " with no failure put: ", a)') name, stat, trim(errmsg)
          failures = failures + 1
        end if
        write (*, '(a, " (", i0, "): a failure at each of its ", i0, " allocations reported")') &
          name, which, n
        return
      end if
      if (stat /= HALOX_SUCCESS .and. (stat /= HALOX_ERROR_ALLOCATION .or. made .or. &
          index(errmsg, name // ": out of memory") == 0 .or. &
          failing_new_live() /= live)) then
        write (error_unit, '(a, ", allocation ", i0, " failing: stat ", i0, ", ", a, ", ", i0, &
          & " allocations left")') name, n + 1, stat, trim(errmsg), failing_new_live() - live
        failures = failures + 1
        if (failures > 5) return
      end if
      n = n + 1
    end do
  end subroutine each_allocation_fails

end program allocation_failure
