! halox for Fortran: halo exchange of 3-D real32 and real64 arrays, built on
! the C API (halox/halox.h) with iso_c_binding. See docs/fortran.md.
!
!   call halox_decomposition_create(decomp, MPI_COMM_WORLD, global=[64, 48, 32])
!   call halox_subdomain(decomp, extent, offset)
!   allocate(u(1-2:extent(1)+2, 1-2:extent(2)+2, 1-2:extent(3)+2))   ! target
!   call halox_exchange_create(ex, decomp, [halox_field(u)], halo=2, transport="shm")
!   call halox_start(ex)   ! interior work here
!   call halox_wait(ex)    ! every halo cell is final
!
! Fields as codes hold them (staggered grids, mixed kinds, subsets):
!   call halox_exchange_create(ex, decomp, [halox_field(density0, name="density0"), &
!                              halox_field(xvel0, location=HALOX_VERTEX, name="xvel0")])
!   call halox_exchange_halos(ex, names=[character(len=16) :: "density0"], depth=1)
!
! Errors follow Fortran's allocate: with stat= (and errmsg=) a failing call
! sets them and returns; without stat=, it stops the program with the
! message. The arrays handed to halox_field must have the TARGET attribute
! and stay allocated while the exchange lives.
module halox
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: real32, real64, int64
  use mpi_f08, only: MPI_Comm
  implicit none
  private

  public :: halox_decomposition, halox_exchange, halox_field
  public :: halox_decomposition_create, halox_decomposition_adopt, halox_decomposition_destroy
  public :: halox_subdomain
  public :: halox_exchange_create, halox_exchange_destroy, halox_exchange_set_field_data
  public :: halox_start, halox_wait, halox_exchange_halos
  public :: halox_reverse, halox_reverse_start, halox_reverse_wait
  public :: halox_transport, halox_algorithm, halox_field_grouping, halox_bytes
  public :: halox_available_transports

  ! The C API's status codes (halox_status)
  integer, parameter, public :: HALOX_SUCCESS = 0
  integer, parameter, public :: HALOX_ERROR_USAGE = 1
  integer, parameter, public :: HALOX_ERROR_STATE = 2
  integer, parameter, public :: HALOX_ERROR_TIMEOUT = 3
  integer, parameter, public :: HALOX_ERROR_ALLOCATION = 4
  integer, parameter, public :: HALOX_ERROR_INTERNAL = 5
  ! How a reverse call combines the copies of a point.
  integer, parameter, public :: HALOX_SUM = 1, HALOX_MIN = 2, HALOX_MAX = 3

  integer(c_int), parameter :: HALOX_FLOAT = 1, HALOX_DOUBLE = 2

  ! Where a field's points sit on the cell grid (halox_location; PETSc DMStag's
  ! conventions, docs/fortran.md): cell centres, faces normal to x, y, z, edges
  ! along x, y, z, vertices (cell corners).
  integer, parameter, public :: HALOX_CELL = 0, HALOX_X_FACE = 1, HALOX_Y_FACE = 2, &
                                HALOX_Z_FACE = 3, HALOX_X_EDGE = 4, HALOX_Y_EDGE = 5, &
                                HALOX_Z_EDGE = 6, HALOX_VERTEX = 7
  character(len=6), parameter :: location_names(0:7) = [character(len=6) :: "cell", &
    "x_face", "y_face", "z_face", "x_edge", "y_edge", "z_edge", "vertex"]
  ! Per location, 1 along the axes where its points sit on the cells' faces.
  integer, parameter :: staggered(3, 0:7) = reshape([0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, &
                                                     0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1], [3, 8])

  type :: halox_decomposition
    type(c_ptr), private :: handle = c_null_ptr
  end type halox_decomposition

  type :: halox_exchange
    type(c_ptr), private :: handle = c_null_ptr
    integer, private :: nfields = 0
    ! Each field's element type and array shape, as created (halox_exchange_set_field_data).
    integer(c_int), allocatable, private :: types(:), shapes(:,:)
  end type halox_exchange

  ! The C API's halox_halo_widths, mirrored: points below (lo) and above (hi) the interior
  ! along x, y, z. -1 (never passed to C) marks a side that no halo=, halo_lo= or halo_hi= gave.
  type, bind(C) :: c_halo_widths
    integer(c_int) :: lo(3) = -1, hi(3) = -1
  end type c_halo_widths

  ! One field: made by halox_field(array) from a 3-D real32 or real64 array
  ! with the TARGET attribute, halo included, any lower bounds; optionally
  ! its location, its own halo widths (points) and a name.
  type :: halox_field
    type(c_ptr), private :: data = c_null_ptr
    integer(c_int), private :: type = 0
    integer(c_int), private :: shape(3) = 0
    integer, private :: lower(3) = 1
    logical, private :: contiguous = .true.
    integer(c_int), private :: location = HALOX_CELL
    type(c_halo_widths), private :: halo      ! -1: given by the exchange, or inferred
    integer(c_int), private :: shared = 0     ! halox_shared_points: 0 from the owner, 1 kept
    character(len=:), allocatable, private :: name
    character(len=:), allocatable, private :: problem
  end type halox_field

  interface halox_field
    module procedure field_real32, field_real64
  end interface halox_field

  ! New memory for a field of an exchange (a code that re-allocates its arrays).
  interface halox_exchange_set_field_data
    module procedure set_field_data_real32, set_field_data_real64
  end interface halox_exchange_set_field_data

  interface halox_decomposition_create
    module procedure decomposition_create_f08, decomposition_create_integer
  end interface halox_decomposition_create

  interface halox_decomposition_adopt
    module procedure decomposition_adopt_f08, decomposition_adopt_integer
  end interface halox_decomposition_adopt

  ! The option strings, NUL-terminated, alive while the exchange is created.
  type :: option_strings
    character(kind=c_char), allocatable :: transport(:), algorithm(:), grouping(:), &
                                           wisdom_file(:), memory(:)
  end type option_strings

  ! The C API's structs, mirrored (checked against halox_options_size()); halox_halo_widths
  ! is c_halo_widths, above.
  type, bind(C) :: c_field_spec
    type(c_ptr) :: data
    integer(c_int) :: type
    integer(c_int) :: location
    type(c_halo_widths) :: halo
    integer(c_int) :: allocated(3)
    type(c_ptr) :: name
    integer(c_int) :: shared
  end type c_field_spec

  ! A NUL-terminated text (a field's name, an algorithm) for a C call.
  type :: c_text
    character(kind=c_char), allocatable :: chars(:)
  end type c_text

  type, bind(C) :: c_options
    type(c_ptr) :: transport = c_null_ptr, algorithm = c_null_ptr, grouping = c_null_ptr
    integer(c_int) :: auto_transport = 0, auto_algorithm = 0, auto_grouping = 0
    real(c_double) :: timeout_seconds = 0
    type(c_ptr) :: wisdom_file = c_null_ptr, memory = c_null_ptr, cuda_stream = c_null_ptr
    integer(c_int) :: ranks_per_node = 0
  end type c_options

  interface
    integer(c_int) function c_decomposition_create(decomp, comm, global, dims, periodic) &
        bind(C, name="halox_decomposition_create_f")
      import :: c_ptr, c_int
      type(c_ptr), intent(inout) :: decomp
      integer(c_int), value :: comm
      integer(c_int), intent(in) :: global(3), dims(3), periodic(3)
    end function
    integer(c_int) function c_decomposition_destroy(decomp) &
        bind(C, name="halox_decomposition_destroy")
      import :: c_ptr, c_int
      type(c_ptr), intent(inout) :: decomp
    end function
    integer(c_int) function c_decomposition_adopt(decomp, comm, global, dims, periodic, order, &
                                                  offset, extent) &
        bind(C, name="halox_decomposition_adopt_f")
      import :: c_ptr, c_int, c_char
      type(c_ptr), intent(inout) :: decomp
      integer(c_int), value :: comm
      integer(c_int), intent(in) :: global(3), dims(3), periodic(3)
      character(kind=c_char), intent(in) :: order(*)
      type(c_ptr), value :: offset, extent
    end function
    integer(c_int) function c_subdomain(decomp, extent, offset) bind(C, name="halox_subdomain")
      import :: c_ptr, c_int
      type(c_ptr), value :: decomp
      integer(c_int), intent(out) :: extent(3), offset(3)
    end function
    integer(c_int) function c_field_points(decomp, location, points) &
        bind(C, name="halox_field_points")
      import :: c_ptr, c_int
      type(c_ptr), value :: decomp
      integer(c_int), value :: location
      integer(c_int), intent(out) :: points(3)
    end function
    integer(c_int) function c_exchange_destroy(ex) bind(C, name="halox_exchange_destroy")
      import :: c_ptr, c_int
      type(c_ptr), intent(inout) :: ex
    end function
    integer(c_int) function c_exchange_create_fields(ex, decomp, interior, nfields, fields, &
                                                     options) &
        bind(C, name="halox_exchange_create_fields")
      import :: c_ptr, c_int, c_field_spec, c_options
      type(c_ptr), intent(inout) :: ex
      type(c_ptr), value :: decomp, interior
      integer(c_int), value :: nfields
      type(c_field_spec), intent(in) :: fields(*)
      type(c_options), intent(in) :: options
    end function
    integer(c_int) function c_start(ex) bind(C, name="halox_start")
      import :: c_ptr, c_int
      type(c_ptr), value :: ex
    end function
    ! algorithm: NUL-terminated, or null for the exchange's
    integer(c_int) function c_start_subset_algorithm(ex, count, indices, depth, algorithm) &
        bind(C, name="halox_start_subset_algorithm")
      import :: c_ptr, c_int
      type(c_ptr), value :: ex, algorithm
      integer(c_int), value :: count, depth
      integer(c_int), intent(in) :: indices(*)
    end function
    integer(c_int) function c_wait(ex) bind(C, name="halox_wait")
      import :: c_ptr, c_int
      type(c_ptr), value :: ex
    end function
    integer(c_int) function c_exchange_set_field_data(ex, index, data) &
        bind(C, name="halox_exchange_set_field_data")
      import :: c_ptr, c_int
      type(c_ptr), value :: ex
      integer(c_int), value :: index
      type(c_ptr), value :: data
    end function
    integer(c_int) function c_reverse_start(ex, op, count, indices, depth, every_holder) &
        bind(C, name="halox_reverse_start")
      import :: c_ptr, c_int
      type(c_ptr), value :: ex
      integer(c_int), value :: op, count
      integer(c_int), intent(in) :: indices(*)
      integer(c_int), value :: depth, every_holder
    end function
    integer(c_int) function c_reverse_wait(ex) bind(C, name="halox_reverse_wait")
      import :: c_ptr, c_int
      type(c_ptr), value :: ex
    end function
    integer(c_int) function c_field_index(ex, name, index) bind(C, name="halox_field_index")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: ex
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(out) :: index
    end function
    integer(c_int) function c_agree(decomp, function_name, problem) bind(C, name="halox_agree")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: decomp
      character(kind=c_char), intent(in) :: function_name(*), problem(*)
    end function
    integer(c_int) function c_exchange_bytes(ex, sent, received, copied) &
        bind(C, name="halox_exchange_bytes")
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: ex
      integer(c_size_t), intent(out) :: sent, received, copied
    end function
    type(c_ptr) function c_last_error() bind(C, name="halox_last_error")
      import :: c_ptr
    end function
    integer(c_size_t) function c_options_size() bind(C, name="halox_options_size")
      import :: c_size_t
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

  ! The C queries of a text, (handle, buf, size), one interface for four.
  abstract interface
    integer(c_int) function string_query(handle, buf, size) bind(C)
      import :: c_ptr, c_int, c_char, c_size_t
      type(c_ptr), value :: handle
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: size
    end function
  end interface
  ! Only ever passed to string_of: gfortran 12 passes VALUE arguments by
  ! reference in some direct calls of a PROCEDURE(...), BIND(C) declaration.
  procedure(string_query), bind(C, name="halox_exchange_transport") :: c_exchange_transport
  procedure(string_query), bind(C, name="halox_exchange_algorithm") :: c_exchange_algorithm
  procedure(string_query), bind(C, name="halox_exchange_grouping") :: c_exchange_grouping
  procedure(string_query), bind(C, name="halox_available_transports") :: &
    c_available_transports

contains

  ! ---- Errors

  ! The C API's message of this thread's last failing call.
  function last_error() result(message)
    character(len=:), allocatable :: message
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: n, i
    p = c_last_error()
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function last_error

  ! As allocate does: stat= and errmsg= set when present, a stop otherwise.
  subroutine conclude(status, stat, errmsg, message)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=*), intent(in), optional :: message
    character(len=:), allocatable :: text
    if (present(stat)) stat = status
    if (status == HALOX_SUCCESS) return
    if (present(message)) then
      text = message
    else
      text = last_error()
    end if
    if (present(errmsg)) errmsg = text
    if (.not. present(stat)) error stop text
  end subroutine conclude

  function c_string(text) result(chars)
    character(len=*), intent(in) :: text
    character(kind=c_char), allocatable :: chars(:)
    integer :: i, n
    n = len_trim(text)
    allocate(chars(n + 1))
    do i = 1, n
      chars(i) = text(i:i)
    end do
    chars(n + 1) = c_null_char
  end function c_string

  ! Where a NUL-terminated text is (null where there is none), for the C call
  ! made while it lives.
  function text_address(text) result(address)
    type(c_text), intent(in), target :: text
    type(c_ptr) :: address
    address = c_null_ptr
    if (allocated(text%chars)) address = c_loc(text%chars)
  end function text_address

  function from_c(chars) result(text)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: text
    integer :: n
    n = 0
    do while (n < size(chars))
      if (chars(n + 1) == c_null_char) exit
      n = n + 1
    end do
    allocate(character(len=n) :: text)
    text = transfer(chars(1:n), text)
  end function from_c

  ! ---- Fields

  ! The array keeps its bounds (a pointer dummy, as F2008 allows for a
  ! TARGET actual): halos left out are inferred from them, interior from 1.
  ! location: HALOX_CELL (default) .. HALOX_VERTEX; halo: one width for every
  ! side, in points, or halo_lo and halo_hi: three widths each (x, y, z),
  ! below and above the interior; name: for errors and subset calls by name;
  ! shared: "from_owner" (default) or "kept", what the faces shared with a
  ! neighbour along a staggered axis get (docs/fortran.md).
  function field_real32(array, location, halo, name, shared, halo_lo, halo_hi) result(field)
    real(real32), pointer, intent(in) :: array(:,:,:)
    integer, intent(in), optional :: location, halo(..), halo_lo(:), halo_hi(:)
    character(len=*), intent(in), optional :: name, shared
    type(halox_field) :: field
    field = new_field(HALOX_FLOAT, shape(array), lbound(array), is_contiguous(array), &
                      location, name, shared)
    call halo_widths(field%halo, field%problem, halo, halo_lo, halo_hi)
    if (size(array) > 0) field%data = c_loc(array(field%lower(1), field%lower(2), field%lower(3)))
  end function field_real32

  function field_real64(array, location, halo, name, shared, halo_lo, halo_hi) result(field)
    real(real64), pointer, intent(in) :: array(:,:,:)
    integer, intent(in), optional :: location, halo(..), halo_lo(:), halo_hi(:)
    character(len=*), intent(in), optional :: name, shared
    type(halox_field) :: field
    field = new_field(HALOX_DOUBLE, shape(array), lbound(array), is_contiguous(array), &
                      location, name, shared)
    call halo_widths(field%halo, field%problem, halo, halo_lo, halo_hi)
    if (size(array) > 0) field%data = c_loc(array(field%lower(1), field%lower(2), field%lower(3)))
  end function field_real64

  ! All of halox_field but the array's address and halo (element: HALOX_FLOAT
  ! or HALOX_DOUBLE). Problems are kept for halox_exchange_create, which
  ! reports them on every rank.
  function new_field(element, extents, lower, contiguous, location, name, shared) result(field)
    integer(c_int), intent(in) :: element
    integer, intent(in) :: extents(3), lower(3)
    logical, intent(in) :: contiguous
    integer, intent(in), optional :: location
    character(len=*), intent(in), optional :: name, shared
    type(halox_field) :: field
    character(len=:), allocatable :: problem
    allocate(character(len=0) :: problem)
    field%type = element
    field%shape = extents
    field%lower = lower
    field%contiguous = contiguous
    if (present(name)) field%name = trim(name)
    if (present(location)) then
      field%location = location
      if (location < HALOX_CELL .or. location > HALOX_VERTEX) &
        problem = "location= takes HALOX_CELL .. HALOX_VERTEX, got " // str(location)
    end if
    if (present(shared)) then
      if (shared == "kept") then
        field%shared = 1
      else if (shared /= "from_owner") then
        problem = "shared= takes ""from_owner"" or ""kept"", got """ // shared // """"
      end if
    end if
    if (len(problem) > 0) field%problem = problem
  end function new_field

  ! The field's name as errors give it.
  function field_label(field, i) result(label)
    type(halox_field), intent(in) :: field
    integer, intent(in) :: i
    character(len=:), allocatable :: label
    if (allocated(field%name)) then
      label = "field '" // field%name // "'"
    else
      label = "the " // ordinal(i) // " field"
    end if
  end function field_label

  ! ---- Decomposition

  ! The ranks of comm on a process grid (dims: ranks per dimension, 0 =
  ! chosen by MPI_Dims_create), the global grid split over them; periodic
  ! per dimension (default: all). Collective.
  subroutine decomposition_create_f08(decomp, comm, global, periodic, dims, stat, errmsg)
    type(halox_decomposition), intent(inout) :: decomp
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: global(3)
    logical, intent(in), optional :: periodic(3)
    integer, intent(in), optional :: dims(3)
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call decomposition_create_integer(decomp, comm%MPI_VAL, global, periodic, dims, stat, errmsg)
  end subroutine decomposition_create_f08

  subroutine decomposition_create_integer(decomp, comm, global, periodic, dims, stat, errmsg)
    type(halox_decomposition), intent(inout) :: decomp
    integer, intent(in) :: comm
    integer, intent(in) :: global(3)
    logical, intent(in), optional :: periodic(3)
    integer, intent(in), optional :: dims(3)
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int) :: c_dims(3)
    c_dims = 0
    if (present(dims)) c_dims = dims
    call conclude(c_decomposition_create(decomp%handle, int(comm, c_int), int(global, c_int), &
                                         c_dims, periodic_flags(periodic)), stat, errmsg)
  end subroutine decomposition_create_integer

  ! Every dimension periodic unless periodic= says otherwise.
  function periodic_flags(periodic) result(flags)
    logical, intent(in), optional :: periodic(3)
    integer(c_int) :: flags(3)
    flags = 1
    if (present(periodic)) flags = merge(1, 0, periodic)
  end function periodic_flags

  ! A code's own decomposition: its ranks numbered in `order` ("XYZ": x
  ! fastest, as CloverLeaf numbers its chunks, the default; "ZYX": z fastest,
  ! as MPI_Cart_create) on a dims grid, and this rank's own sub-domain as the
  ! code holds it (offset: global index, 0-based, of its first cell; extent:
  ! its cells; both required). Collective: the sub-domains must tile the
  ! global grid as the order places the ranks, so a wrong order is refused.
  subroutine decomposition_adopt_f08(decomp, comm, global, dims, periodic, order, offset, &
                                     extent, stat, errmsg)
    type(halox_decomposition), intent(inout) :: decomp
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: global(3), dims(3), offset(3), extent(3)
    logical, intent(in), optional :: periodic(3)
    character(len=*), intent(in), optional :: order
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call decomposition_adopt_integer(decomp, comm%MPI_VAL, global, dims, periodic, order, &
                                     offset, extent, stat, errmsg)
  end subroutine decomposition_adopt_f08

  subroutine decomposition_adopt_integer(decomp, comm, global, dims, periodic, order, offset, &
                                         extent, stat, errmsg)
    type(halox_decomposition), intent(inout) :: decomp
    integer, intent(in) :: comm
    integer, intent(in) :: global(3), dims(3), offset(3), extent(3)
    logical, intent(in), optional :: periodic(3)
    character(len=*), intent(in), optional :: order
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int), target :: c_offset(3), c_extent(3)
    character(len=:), allocatable :: rank_order
    rank_order = "XYZ"
    if (present(order)) rank_order = order
    c_offset = offset
    c_extent = extent
    call conclude(c_decomposition_adopt(decomp%handle, int(comm, c_int), int(global, c_int), &
                                        int(dims, c_int), periodic_flags(periodic), &
                                        c_string(rank_order), c_loc(c_offset), c_loc(c_extent)), &
                  stat, errmsg)
  end subroutine decomposition_adopt_integer

  ! Collective. The exchanges built on it stay usable.
  subroutine halox_decomposition_destroy(decomp, stat, errmsg)
    type(halox_decomposition), intent(inout) :: decomp
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call conclude(c_decomposition_destroy(decomp%handle), stat, errmsg)
  end subroutine halox_decomposition_destroy

  ! This rank's interior: cells per dimension, and the global index (0-based)
  ! of its first cell.
  subroutine halox_subdomain(decomp, extent, offset, stat, errmsg)
    type(halox_decomposition), intent(in) :: decomp
    integer, intent(out) :: extent(3)
    integer, intent(out), optional :: offset(3)
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int) :: c_extent(3), c_offset(3)
    c_extent = 0
    c_offset = 0
    call conclude(c_subdomain(decomp%handle, c_extent, c_offset), stat, errmsg)
    extent = c_extent
    if (present(offset)) offset = c_offset
  end subroutine halox_subdomain

  ! The transports usable on every rank, space separated. Collective.
  function halox_available_transports(decomp, stat, errmsg) result(names)
    type(halox_decomposition), intent(in) :: decomp
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=:), allocatable :: names
    names = string_of(c_available_transports, decomp%handle, stat, errmsg)
  end function halox_available_transports

  ! ---- Exchange

  ! Collective over the decomposition's ranks, every rank with the same
  ! arguments. field_list: the fields (halox_field(u), ...), each of its own
  ! location (default HALOX_CELL), kind and halo: its own halo widths, else
  ! these (halo=: one width for every side, or halo_lo= and halo_hi=: three
  ! each, x, y, z, below and above the interior), else inferred from its
  ! bounds (docs/fortran.md, "Staggered grids").
  ! The options, all optional:
  !   transport    "mpi-p2p" (default), "shm", "shm+ucx", ..., "auto" (measured)
  !   algorithm    "standard" (default), "staged", "faces", "auto" (measured)
  !   grouping     how the fields are grouped into messages: "compact", "sequence",
  !                "cache" (default), a number of fields per message, "auto" (measured)
  !   auto         what to measure: "transport", "algorithm", "grouping" (a list), "all",
  !                or .true. (all)
  !   timeout      seconds a wait may last (integer or real; default HALOX_TIMEOUT or 600)
  !   wisdom_file  a file of earlier measured choices
  !   memory       "detect" (default), "host", "device" (device arrays: docs/fortran.md)
  !   ranks_per_node  groups of this many consecutive ranks count as nodes
  subroutine halox_exchange_create(ex, decomp, field_list, halo, transport, algorithm, grouping, &
                                   auto, timeout, wisdom_file, memory, ranks_per_node, stat, &
                                   errmsg, halo_lo, halo_hi)
    type(halox_exchange), intent(inout) :: ex
    type(halox_decomposition), intent(in) :: decomp
    type(halox_field), intent(in) :: field_list(:)
    integer, intent(in), optional :: halo(..), halo_lo(:), halo_hi(:)
    character(len=*), intent(in), optional :: transport, algorithm, wisdom_file, memory
    class(*), intent(in), optional :: grouping, auto, timeout
    integer, intent(in), optional :: ranks_per_node
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(option_strings), target :: strings
    type(c_options) :: options
    type(c_halo_widths) :: widths
    character(len=:), allocatable :: problem

    allocate(character(len=0) :: problem)
    call halo_widths(widths, problem, halo, halo_lo, halo_hi)
    call text_options(strings, options, transport, algorithm, wisdom_file, memory)
    if (present(grouping)) call grouping_option(grouping, strings, options, problem)
    if (present(auto)) call auto_option(auto, options, problem)
    if (present(timeout)) call timeout_option(timeout, options, problem)
    if (present(ranks_per_node)) options%ranks_per_node = ranks_per_node
    call create_fields(ex, decomp, field_list, widths, options, problem, stat, errmsg)
  end subroutine halox_exchange_create

  ! Problems found here fail every rank, as the library's own do.
  integer(c_int) function agreed(decomp, options, problem) result(status)
    type(halox_decomposition), intent(in) :: decomp
    type(c_options), intent(in) :: options
    character(len=:), allocatable, intent(inout) :: problem
    if (c_sizeof(options) /= c_options_size() .and. len(problem) == 0) &
      problem = "the halox module and library disagree on halox_options: rebuild the module " // &
                "with this library"
    status = c_agree(decomp%handle, c_string("halox_exchange_create"), c_string(problem))
  end function agreed

  ! The created exchange remembers its fields (halox_exchange_set_field_data).
  subroutine conclude_create(ex, field_list, status, stat, errmsg)
    type(halox_exchange), intent(inout) :: ex
    type(halox_field), intent(in) :: field_list(:)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=*), parameter :: c_call = "halox_exchange_create_fields:"
    character(len=:), allocatable :: text
    integer :: i
    if (status /= HALOX_SUCCESS) then
      ! The message names the routine the code called, not the C call behind it.
      text = last_error()
      if (index(text, c_call) == 1) text = "halox_exchange_create:" // text(len(c_call) + 1:)
      call conclude(status, stat, errmsg, text)
      return
    end if
    ex%nfields = size(field_list)
    ex%types = [(field_list(i)%type, i = 1, size(field_list))]
    allocate(ex%shapes(3, size(field_list)))
    do i = 1, size(field_list)
      ex%shapes(:, i) = field_list(i)%shape
    end do
    call conclude(status, stat, errmsg)
  end subroutine conclude_create

  ! halox_exchange_create's fields, described to the C API one by one.
  ! widths: the exchange's halo widths (-1: none given).
  subroutine create_fields(ex, decomp, field_list, widths, options, problem, stat, errmsg)
    type(halox_exchange), intent(inout) :: ex
    type(halox_decomposition), intent(in) :: decomp
    type(halox_field), intent(in) :: field_list(:)
    type(c_halo_widths), intent(in) :: widths
    type(c_options), intent(in) :: options
    character(len=:), allocatable, intent(inout) :: problem
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(c_field_spec) :: specs(max(size(field_list), 1))
    type(c_text), target :: names(max(size(field_list), 1))
    integer(c_int) :: extent(3), offset(3), status
    integer :: i

    extent = 0
    offset = 0
    status = c_subdomain(decomp%handle, extent, offset)   ! a bad handle: reported below
    do i = 1, size(field_list)
      associate (f => field_list(i))
        if (allocated(f%name)) names(i)%chars = c_string(f%name)
        specs(i) = c_field_spec(f%data, f%type, f%location, f%halo, f%shape, &
                                text_address(names(i)), f%shared)
        if (len(problem) > 0) cycle
        if (allocated(f%problem)) then
          problem = field_label(f, i) // ": " // f%problem
        else if (.not. f%contiguous) then
          problem = field_label(f, i) // " is not contiguous (an array section with " // &
                    "strides?): pass whole arrays"
        else if (f%halo%lo(1) < 0 .and. widths%lo(1) >= 0) then
          specs(i)%halo = widths
        else if (f%halo%lo(1) < 0 .and. status == HALOX_SUCCESS) then
          call infer_halo(f, i, decomp, extent, specs(i)%halo, problem)
        end if
      end associate
    end do
    status = agreed(decomp, options, problem)
    if (status == HALOX_SUCCESS) &
      status = c_exchange_create_fields(ex%handle, decomp%handle, c_null_ptr, &
                                        int(size(field_list), c_int), specs, options)
    call conclude_create(ex, field_list, status, stat, errmsg)
  end subroutine create_fields

  ! A halo from the array's bounds, the interior starting at index 1: below,
  ! 1 - lbound points; above, as many cells as below, so one point more along
  ! a staggered axis (CloverLeaf's extents: cells x_min-2:x_max+2, vertices
  ! x_min-2:x_max+3). The rank at the high end of an open axis holds one more
  ! point there and may end where the others do (CloverLeaf's x_max+3: one
  ! point less above, on a side without a neighbour) or one further.
  ! Other bounds need halo=.
  subroutine infer_halo(f, i, decomp, extent, halo, problem)
    type(halox_field), intent(in) :: f
    integer, intent(in) :: i
    type(halox_decomposition), intent(in) :: decomp
    integer(c_int), intent(in) :: extent(3)
    type(c_halo_widths), intent(inout) :: halo
    character(len=:), allocatable, intent(inout) :: problem
    integer :: d, below, above, upper, points
    integer(c_int) :: held(3)
    character(len=*), parameter :: axes = "xyz"
    if (c_field_points(decomp%handle, int(f%location, c_int), held) /= HALOX_SUCCESS) then
      problem = field_label(f, i) // ": location " // str(f%location) // " is not a halox location"
      return
    end if
    do d = 1, 3
      below = max(1 - f%lower(d), 0)
      above = below + staggered(d, f%location)
      upper = f%lower(d) + f%shape(d) - 1
      points = held(d)
      ! The last face of an open axis: the same bounds as the other ranks
      ! (CloverLeaf's), the halo above one point less.
      if (points > extent(d) .and. upper == points + above - 1) above = above - 1
      if (f%lower(d) > 1 .or. upper /= points + above) then
        problem = field_label(f, i) // " (" // trim(location_names(f%location)) // &
                  ") has bounds " // str(f%lower(d)) // ":" // str(upper) // " along " // &
                  axes(d:d) // ", but a " // trim(location_names(f%location)) // &
                  " field on this rank holds points 1:" // str(points) // " along " // &
                  axes(d:d) // " (" // str(extent(d)) // " cells) and, with halos of " // &
                  str(below) // " below and " // str(above) // " above, spans " // &
                  str(1 - below) // ":" // str(points + above)
        if (points > extent(d)) problem = problem // " (this rank holds the last " // &
          axes(d:d) // " face of the open axis too: " // str(1 - below) // ":" // &
          str(points + above - 1) // " also fits)"
        problem = problem // "; give halo= for other widths"
        return
      end if
      halo%lo(d) = below
      halo%hi(d) = above
    end do
  end subroutine infer_halo

  ! The widths halo= (one for every side) or halo_lo= and halo_hi= (three
  ! each, x, y, z: below and above the interior) give; widths stays -1 when
  ! none is given. The first problem found is kept (problem: none so far when
  ! not allocated or empty).
  subroutine halo_widths(widths, problem, halo, halo_lo, halo_hi)
    type(c_halo_widths), intent(inout) :: widths
    character(len=:), allocatable, intent(inout) :: problem
    integer, intent(in), optional :: halo(..), halo_lo(:), halo_hi(:)
    character(len=:), allocatable :: found
    character(len=*), parameter :: per_side = "; per side, give halo_lo=[x, y, z] and " // &
      "halo_hi=[x, y, z], the points below and above the interior"
    allocate(character(len=0) :: found)
    if (present(halo)) then
      select rank (halo)
      rank (0)
        widths = c_halo_widths(halo, halo)
      rank (1)
        if (size(halo) == 1) then
          widths = c_halo_widths(halo(1), halo(1))
        else
          found = "halo= takes one width for every side, got " // str(size(halo)) // per_side
        end if
      rank default
        found = "halo= takes one width for every side" // per_side
      end select
    end if
    if (present(halo_lo)) call side_widths("halo_lo", halo_lo, widths%lo, found)
    if (present(halo_hi)) call side_widths("halo_hi", halo_hi, widths%hi, found)
    if (len(found) == 0 .and. present(halo) .and. (present(halo_lo) .or. present(halo_hi))) &
      found = "halo= (one width for every side) or halo_lo= and halo_hi=, not both"
    if (len(found) == 0 .and. (present(halo_lo) .neqv. present(halo_hi))) &
      found = "halo_lo= and halo_hi= go together"
    if (len(found) == 0 .and. (present(halo) .or. present(halo_lo) .or. present(halo_hi)) .and. &
        (any(widths%lo < 0) .or. any(widths%hi < 0))) &
      found = "halo widths must not be negative, got halo_lo=[" // str(widths%lo(1)) // ", " // &
              str(widths%lo(2)) // ", " // str(widths%lo(3)) // "], halo_hi=[" // &
              str(widths%hi(1)) // ", " // str(widths%hi(2)) // ", " // str(widths%hi(3)) // "]"
    if (len(found) == 0) return
    if (allocated(problem)) then
      if (len(problem) > 0) return
    end if
    problem = found
  end subroutine halo_widths

  ! halo_lo= or halo_hi= (keyword: which): three widths, x, y, z.
  subroutine side_widths(keyword, given, widths, problem)
    character(len=*), intent(in) :: keyword
    integer, intent(in) :: given(:)
    integer(c_int), intent(inout) :: widths(3)
    character(len=:), allocatable, intent(inout) :: problem
    if (size(given) == 3) then
      widths = given
    else if (len(problem) == 0) then
      problem = keyword // "= takes three widths (x, y, z), got " // str(size(given))
    end if
  end subroutine side_widths

  subroutine text_options(strings, options, transport, algorithm, wisdom_file, memory)
    type(option_strings), intent(inout), target :: strings
    type(c_options), intent(inout) :: options
    character(len=*), intent(in), optional :: transport, algorithm, wisdom_file, memory
    call text_option(transport, strings%transport, options%transport)
    call text_option(algorithm, strings%algorithm, options%algorithm)
    call text_option(wisdom_file, strings%wisdom_file, options%wisdom_file)
    call text_option(memory, strings%memory, options%memory)
  end subroutine text_options

  ! chars: where the NUL-terminated text lives while the exchange is created.
  subroutine text_option(text, chars, address)
    character(len=*), intent(in), optional :: text
    character(kind=c_char), allocatable, target, intent(inout) :: chars(:)
    type(c_ptr), intent(inout) :: address
    if (.not. present(text)) return
    chars = c_string(text)
    address = c_loc(chars)
  end subroutine text_option

  subroutine grouping_option(grouping, strings, options, problem)
    class(*), intent(in) :: grouping
    type(option_strings), intent(inout), target :: strings
    type(c_options), intent(inout) :: options
    character(len=:), allocatable, intent(inout) :: problem
    select type (grouping)
    type is (character(len=*))
      strings%grouping = c_string(grouping)
    type is (integer)
      if (grouping < 1) then
        problem = "grouping= takes a positive number of fields per message, got " // str(grouping)
        return
      end if
      strings%grouping = c_string(str(grouping))
    class default
      problem = 'grouping= takes "compact", "sequence", "cache" or a number of fields per message'
      return
    end select
    options%grouping = c_loc(strings%grouping)
  end subroutine grouping_option

  subroutine auto_option(auto, options, problem)
    class(*), intent(in) :: auto
    type(c_options), intent(inout) :: options
    character(len=:), allocatable, intent(inout) :: problem
    character(len=:), allocatable :: word
    integer :: start, finish
    select type (auto)
    type is (logical)
      options%auto_transport = merge(1, 0, auto)
      options%auto_algorithm = options%auto_transport
      options%auto_grouping = options%auto_transport
    type is (character(len=*))
      start = 1
      do while (start <= len(auto))
        finish = scan(auto(start:), ", ")
        if (finish == 0) finish = len(auto) - start + 2
        word = auto(start:start + finish - 2)
        start = start + finish
        select case (word)
        case ("")
        case ("transport")
          options%auto_transport = 1
        case ("algorithm")
          options%auto_algorithm = 1
        case ("grouping")
          options%auto_grouping = 1
        case ("all")
          options%auto_transport = 1
          options%auto_algorithm = 1
          options%auto_grouping = 1
        case default
          problem = 'auto= names "transport", "algorithm", "grouping" or "all", not "' // &
                    word // '"'
        end select
      end do
    class default
      problem = 'auto= takes .true. or a list of "transport", "algorithm", "grouping", "all"'
    end select
  end subroutine auto_option

  subroutine timeout_option(timeout, options, problem)
    class(*), intent(in) :: timeout
    type(c_options), intent(inout) :: options
    character(len=:), allocatable, intent(inout) :: problem
    select type (timeout)
    type is (integer)
      options%timeout_seconds = timeout
    type is (real(real32))
      options%timeout_seconds = timeout
    type is (real(real64))
      options%timeout_seconds = timeout
    class default
      problem = "timeout= takes seconds as an integer or a real"
    end select
  end subroutine timeout_option

  function str(i) result(text)
    integer, intent(in) :: i
    character(len=:), allocatable :: text
    character(len=12) :: buf
    write(buf, "(i0)") i
    text = trim(buf)
  end function str

  function ordinal(i) result(text)
    integer, intent(in) :: i
    character(len=:), allocatable :: text
    select case (i)
    case (1)
      text = "1st"
    case (2)
      text = "2nd"
    case (3)
      text = "3rd"
    case default
      text = str(i) // "th"
    end select
  end function ordinal

  ! Not collective; an exchange in flight is completed first.
  subroutine halox_exchange_destroy(ex, stat, errmsg)
    type(halox_exchange), intent(inout) :: ex
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call conclude(c_exchange_destroy(ex%handle), stat, errmsg)
    if (allocated(ex%types)) deallocate(ex%types, ex%shapes)
  end subroutine halox_exchange_destroy

  ! field: 1-based, as passed to halox_exchange_create; array: of the type and
  ! shape of the one it replaces, with the TARGET attribute. Not collective,
  ! but every rank gives the same fields new memory before the same call,
  ! which re-establishes their schedules collectively.
  subroutine set_field_data_real32(ex, field, array, stat, errmsg)
    type(halox_exchange), intent(in) :: ex
    integer, intent(in) :: field
    real(real32), pointer, intent(in) :: array(:,:,:)
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call set_field_data(ex, field, halox_field(array), stat, errmsg)
  end subroutine set_field_data_real32

  subroutine set_field_data_real64(ex, field, array, stat, errmsg)
    type(halox_exchange), intent(in) :: ex
    integer, intent(in) :: field
    real(real64), pointer, intent(in) :: array(:,:,:)
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call set_field_data(ex, field, halox_field(array), stat, errmsg)
  end subroutine set_field_data_real64

  ! new: the new array as halox_field describes it.
  subroutine set_field_data(ex, field, new, stat, errmsg)
    type(halox_exchange), intent(in) :: ex
    integer, intent(in) :: field
    type(halox_field), intent(in) :: new
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=*), parameter :: me = "halox_exchange_set_field_data: "
    character(len=*), parameter :: kinds(2) = [character(len=6) :: "real32", "real64"]
    if (field < 1 .or. field > ex%nfields) then
      call conclude(HALOX_ERROR_USAGE, stat, errmsg, me // "field " // str(field) // &
                    " is not one of the exchange's " // str(ex%nfields) // " fields")
    else if (new%type /= ex%types(field) .or. any(new%shape /= ex%shapes(:, field))) then
      call conclude(HALOX_ERROR_USAGE, stat, errmsg, me // "the " // ordinal(field) // &
                    " field's new array is " // trim(kinds(new%type)) // " " // &
                    str(new%shape(1)) // " x " // str(new%shape(2)) // " x " // &
                    str(new%shape(3)) // ", the one it replaces " // &
                    trim(kinds(ex%types(field))) // " " // str(ex%shapes(1, field)) // " x " // &
                    str(ex%shapes(2, field)) // " x " // str(ex%shapes(3, field)))
    else if (.not. new%contiguous) then
      call conclude(HALOX_ERROR_USAGE, stat, errmsg, me // "the " // ordinal(field) // &
                    " field's new array is not contiguous: pass whole arrays")
    else
      call conclude(c_exchange_set_field_data(ex%handle, int(field - 1, c_int), new%data), stat, &
                    errmsg)
    end if
  end subroutine set_field_data

  ! The first stage is in flight on return: overlap interior work here.
  ! A subset: fields= (1-based, in the order of halox_exchange_create) or
  ! names=, and depth= (cells; 0, the default: each field's whole halo).
  ! The first call of a subset and depth is collective (it builds its
  ! schedule); later ones reuse it. algorithm=: the call's own ("standard",
  ! "staged", "faces"; absent: the exchange's).
  subroutine halox_start(ex, stat, errmsg, fields, names, depth, mask, algorithm)
    include "forward_call_arguments.inc"
    call forward_call("halox_start", ex, .false., stat, errmsg, fields, names, depth, mask, &
                      algorithm)
  end subroutine halox_start

  ! halox_start, or halox_start and halox_wait (run), for every field or a subset
  ! (as halox_exchange_halos and halox_exchange_subset do in C).
  subroutine forward_call(function_name, ex, run, stat, errmsg, fields, names, depth, mask, &
                          algorithm)
    character(len=*), intent(in) :: function_name
    logical, intent(in) :: run
    include "forward_call_arguments.inc"
    integer(c_int), allocatable :: indices(:)
    integer(c_int) :: status
    character(len=:), allocatable :: message
    type(c_text), target :: algorithm_text
    if (.not. (present(fields) .or. present(names) .or. present(depth) .or. present(mask) .or. &
               present(algorithm))) then
      status = c_start(ex%handle)
    else
      call subset_indices(function_name, ex, fields, names, mask, indices, status, message)
      if (status /= HALOX_SUCCESS) then
        call conclude(status, stat, errmsg, message)
        return
      end if
      if (present(algorithm)) algorithm_text%chars = c_string(algorithm)
      status = c_start_subset_algorithm(ex%handle, size(indices, kind=c_int), indices, &
                                        depth_of(depth), text_address(algorithm_text))
    end if
    if (status == HALOX_SUCCESS .and. run) status = c_wait(ex%handle)
    if (status /= HALOX_SUCCESS) message = in_fortran(function_name)
    call conclude(status, stat, errmsg, message)
  end subroutine forward_call

  ! The library's last error as the Fortran call's: its own name in front
  ! instead of the C call's ("halox_start_subset: ..." -> "halox_start: ...").
  function in_fortran(function_name) result(text)
    character(len=*), intent(in) :: function_name
    character(len=:), allocatable :: text
    integer :: colon
    text = last_error()
    colon = index(text, ": ")
    if (colon > 1 .and. index(text, "halox_") == 1 .and. scan(text(1:colon - 1), " ") == 0) then
      text = function_name // text(colon:)
    else
      text = function_name // ": " // text
    end if
  end function in_fortran

  integer(c_int) function depth_of(depth)
    integer, intent(in), optional :: depth
    depth_of = 0
    if (present(depth)) depth_of = depth
  end function depth_of

  ! The 0-based indices of a subset: fields= or names=, neither (all fields).
  subroutine subset_indices(function_name, ex, fields, names, mask, indices, status, message)
    character(len=*), intent(in) :: function_name
    type(halox_exchange), intent(in) :: ex
    integer, intent(in), optional :: fields(:)
    character(len=*), intent(in), optional :: names(:)
    logical, intent(in), optional :: mask(:)
    integer(c_int), allocatable, intent(out) :: indices(:)
    integer(c_int), intent(out) :: status
    character(len=:), allocatable, intent(out) :: message   ! unallocated: the library's
    integer :: i
    status = HALOX_SUCCESS
    if (count([present(fields), present(names), present(mask)]) > 1) then
      status = HALOX_ERROR_USAGE
      message = function_name // ": give one of fields=, names= and mask="
      return
    end if
    if (present(mask)) then
      if (size(mask) /= ex%nfields) then
        status = HALOX_ERROR_USAGE
        message = function_name // ": mask= has " // str(size(mask)) // " entries for " // &
                  str(ex%nfields) // " fields"
        return
      end if
      indices = pack([(i, i = 0, ex%nfields - 1)], mask)
    end if
    if (present(fields)) then
      if (any(fields < 1 .or. fields > ex%nfields)) then
        status = HALOX_ERROR_USAGE
        message = function_name // ": fields= takes 1 to " // str(ex%nfields) // &
                  ", the fields in the order halox_exchange_create got them"
        return
      end if
      indices = fields - 1
    else if (present(mask)) then
      continue
    else if (present(names)) then
      allocate(indices(size(names)))
      do i = 1, size(names)
        status = c_field_index(ex%handle, c_string(names(i)), indices(i))
        if (status /= HALOX_SUCCESS) return
      end do
    else
      indices = [(i, i = 0, ex%nfields - 1)]
    end if
    if (size(indices) == 0) then
      status = HALOX_ERROR_USAGE
      message = function_name // ": fields=, names= or mask= lists no field"
    end if
  end subroutine subset_indices

  ! Every halo cell is final on return.
  subroutine halox_wait(ex, stat, errmsg)
    type(halox_exchange), intent(in) :: ex
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call conclude(c_wait(ex%handle), stat, errmsg)
  end subroutine halox_wait

  ! halox_start and halox_wait in one; fields=, names=, mask=, depth= as for halox_start.
  subroutine halox_exchange_halos(ex, stat, errmsg, fields, names, depth, mask, algorithm)
    include "forward_call_arguments.inc"
    call forward_call("halox_exchange_halos", ex, .true., stat, errmsg, fields, names, depth, &
                      mask, algorithm)
  end subroutine halox_exchange_halos

  ! Reverse calls (docs/fortran.md#adding-into-halos): every copy of a point in
  ! a halo combined into its owner with op= (HALOX_SUM, the default,
  ! HALOX_MIN, HALOX_MAX), or into every rank that holds it with
  ! every_holder=.true.; fields=, names=, depth= as for halox_start (neither:
  ! every field). The first stage is in flight on return.
  subroutine halox_reverse_start(ex, op, stat, errmsg, fields, names, depth, every_holder, mask)
    include "reverse_call_arguments.inc"
    call reverse_call("halox_reverse_start", ex, .false., op, stat, errmsg, fields, names, depth, &
                      every_holder, mask)
  end subroutine halox_reverse_start

  ! Every owner (or every holder) has its total on return.
  subroutine halox_reverse_wait(ex, stat, errmsg)
    type(halox_exchange), intent(in) :: ex
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int) :: status
    character(len=:), allocatable :: message
    status = c_reverse_wait(ex%handle)
    if (status /= HALOX_SUCCESS) message = in_fortran("halox_reverse_wait")
    call conclude(status, stat, errmsg, message)
  end subroutine halox_reverse_wait

  ! halox_reverse_start and halox_reverse_wait in one.
  subroutine halox_reverse(ex, op, stat, errmsg, fields, names, depth, every_holder, mask)
    include "reverse_call_arguments.inc"
    call reverse_call("halox_reverse", ex, .true., op, stat, errmsg, fields, names, depth, &
                      every_holder, mask)
  end subroutine halox_reverse

  ! halox_reverse_start, or it and halox_reverse_wait (run).
  subroutine reverse_call(function_name, ex, run, op, stat, errmsg, fields, names, depth, &
                          every_holder, mask)
    character(len=*), intent(in) :: function_name
    logical, intent(in) :: run
    include "reverse_call_arguments.inc"
    integer(c_int), allocatable :: indices(:)
    integer(c_int) :: status, how, everywhere
    character(len=:), allocatable :: message
    how = HALOX_SUM
    if (present(op)) how = op
    everywhere = 0
    if (present(every_holder)) then
      if (every_holder) everywhere = 1
    end if
    call subset_indices(function_name, ex, fields, names, mask, indices, status, message)
    if (status == HALOX_SUCCESS) then
      status = c_reverse_start(ex%handle, how, size(indices, kind=c_int), indices, &
                               depth_of(depth), everywhere)
      if (status == HALOX_SUCCESS .and. run) status = c_reverse_wait(ex%handle)
      if (status /= HALOX_SUCCESS) message = in_fortran(function_name)
    end if
    call conclude(status, stat, errmsg, message)
  end subroutine reverse_call

  ! A C query's text for the exchange or decomposition handle.
  function string_of(query, handle, stat, errmsg) result(text)
    procedure(string_query) :: query
    type(c_ptr), intent(in) :: handle
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=:), allocatable :: text
    character(kind=c_char) :: buf(1024)
    buf = c_null_char
    call conclude(query(handle, buf, size(buf, kind=c_size_t)), stat, errmsg)
    text = from_c(buf)
  end function string_of

  ! The transport as run, e.g. "shm" (= shm+mpi-p2p): the measured choice
  ! with transport="auto".
  function halox_transport(ex, stat, errmsg) result(name)
    type(halox_exchange), intent(in) :: ex
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=:), allocatable :: name
    name = string_of(c_exchange_transport, ex%handle, stat, errmsg)
  end function halox_transport

  function halox_algorithm(ex, stat, errmsg) result(name)
    type(halox_exchange), intent(in) :: ex
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=:), allocatable :: name
    name = string_of(c_exchange_algorithm, ex%handle, stat, errmsg)
  end function halox_algorithm

  ! The field grouping as run: "compact", "sequence", "cache" or a number.
  function halox_field_grouping(ex, stat, errmsg) result(name)
    type(halox_exchange), intent(in) :: ex
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=:), allocatable :: name
    name = string_of(c_exchange_grouping, ex%handle, stat, errmsg)
  end function halox_field_grouping

  ! Bytes per exchange this rank sends, receives and copies within itself.
  subroutine halox_bytes(ex, sent, received, copied, stat, errmsg)
    type(halox_exchange), intent(in) :: ex
    integer(int64), intent(out), optional :: sent, received, copied
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_size_t) :: s, r, c
    s = 0
    r = 0
    c = 0
    call conclude(c_exchange_bytes(ex%handle, s, r, c), stat, errmsg)
    if (present(sent)) sent = s
    if (present(received)) received = r
    if (present(copied)) copied = c
  end subroutine halox_bytes

end module halox
