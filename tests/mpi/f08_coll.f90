! f08_coll: collectives through `use mpi_f08` on array sections and on
! datatypes built from Fortran arrays: MPI_Bcast of a strided section,
! reductions (MPI_Allreduce, MPI_Reduce, MPI_IN_PLACE, MPI_Scan,
! MPI_Reduce_scatter_block) with sections for both buffers, a reduction
! written as an mpi_f08 procedure (TYPE(C_PTR) vectors, TYPE(MPI_Datatype)),
! gathers into a row of a matrix, MPI_Scatterv from a section, MPI_Alltoall
! between sections, nonblocking collectives on sections (the copy goes
! back when the request completes), a persistent broadcast of a section;
! MPI_Type_create_subarray with
! MPI_ORDER_FORTRAN, a row of a column-major matrix as MPI_Type_vector,
! MPI_Type_create_resized to scatter rows; a Cartesian grid's
! MPI_Neighbor_alltoall. Any size >= 1.
module f08_coll_ops
  use mpi_f08
  use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer
  implicit none
  integer :: nbadtype = 0
contains
  ! elementwise maximum of absolute values, on REAL only
  subroutine absmax(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    real, pointer :: x(:), y(:)
    if (datatype /= MPI_REAL) then
      nbadtype = nbadtype + 1
      return
    end if
    call c_f_pointer(invec, x, [len])
    call c_f_pointer(inoutvec, y, [len])
    y = max(abs(x), abs(y))
  end subroutine absmax
end module f08_coll_ops

program f08_coll
  use mpi_f08
  use f08_coll_ops
  implicit none
  integer :: nfail, myrank, nprocs, i, j, n, root
  real, asynchronous :: a(40), b(40), m(8, 64), col(64), x
  integer, asynchronous :: iv(64), jv(64)
  integer, allocatable :: counts(:), displs(:)
  type(MPI_Op) :: op
  type(MPI_Request) :: reqs(3)
  type(MPI_Datatype) :: sub, row, rowr
  type(MPI_Comm) :: cart
  integer :: dims(2), nbr(4), got(4), sizes(2), subsizes(2), starts(2)
  integer(kind=MPI_ADDRESS_KIND) :: lb, ext
  logical :: periods(2)

  nfail = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  n = nprocs
  allocate (counts(n), displs(n))

  ! broadcast of a strided section, from the last rank
  root = n - 1
  a = -1
  if (myrank == root) a(1:40:4) = [(i, i = 1, 10)]
  call MPI_Bcast(a(1:40:4), 10, MPI_REAL, root, MPI_COMM_WORLD)
  call check(all(a(1:40:4) == [(i, i = 1, 10)]), 'MPI_Bcast of a section')
  if (myrank /= root) call check(all(a(2:40:4) == -1), 'MPI_Bcast: gaps untouched')

  ! reductions between sections, in place, and a reduction of our own
  a = [(myrank + i, i = 1, 40)]
  b = -1
  call MPI_Allreduce(a(1:40:2), b(2:40:2), 20, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  call check(all(b(2:40:2) == [(n * i + n * (n - 1) / 2, i = 1, 40, 2)]), &
             'MPI_Allreduce between sections')
  call check(all(b(1:39:2) == -1), 'MPI_Allreduce: gaps untouched')
  b = [(myrank, i = 1, 40)]
  call MPI_Allreduce(MPI_IN_PLACE, b(40:1:-3), 14, MPI_REAL, MPI_MAX, MPI_COMM_WORLD)
  call check(all(b(40:1:-3) == n - 1) .and. b(39) == myrank, 'MPI_Allreduce in place')
  call MPI_Op_create(absmax, .true., op)
  a = [(merge(-1, 1, mod(i, 2) == 0) * (myrank + i), i = 1, 40)]
  b = 0
  call MPI_Reduce(a(1:10), b(1:20:2), 10, MPI_REAL, op, 0, MPI_COMM_WORLD)
  if (myrank == 0) call check(all(b(1:20:2) == [(n - 1 + i, i = 1, 10)]), &
                              'a reduction written in Fortran, into a section')
  call check(nbadtype == 0, 'it gets MPI_REAL as its datatype')
  call MPI_Op_free(op)
  call MPI_Scan(real(myrank + 1), b(3), 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  call check(b(3) == (myrank + 1) * (myrank + 2) / 2, 'MPI_Scan of a scalar')
  a = [(i, i = 1, 40)]
  b = -1
  call MPI_Reduce_scatter_block(a(1:2 * n:2), b(5:5), 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  call check(b(5) == n * (2 * myrank + 1) .and. b(4) == -1, 'MPI_Reduce_scatter_block')

  ! gathers into a row of a matrix (noncontiguous), scatter from a section
  m = -1
  iv(1:2) = [myrank, 2 * myrank]
  root = n / 2
  call MPI_Gather(real(iv(1:2)), 2, MPI_REAL, m(3, :), 2, MPI_REAL, root, MPI_COMM_WORLD)
  if (myrank == root) then
    call check(all(m(3, 1:2 * n:2) == [(i, i = 0, n - 1)]), 'MPI_Gather into a row')
    call check(all(m(3, 2:2 * n:2) == [(2 * i, i = 0, n - 1)]), 'MPI_Gather into a row (2)')
    call check(all(m(2, :) == -1), 'the other rows untouched')
  end if
  call MPI_Allgather(iv(1:2:1), 1, MPI_INTEGER, jv(1:2 * n:2), 1, MPI_INTEGER, MPI_COMM_WORLD)
  call check(all(jv(1:2 * n:2) == [(i, i = 0, n - 1)]), 'MPI_Allgather into a section')
  counts = [(i, i = 1, n)]
  displs = [((i - 1) * i / 2, i = 1, n)]
  if (myrank == 0) iv(1:n * (n + 1) / 2) = [((i, j = 1, i), i = 1, n)]
  jv = -1
  call MPI_Scatterv(iv, counts, displs, MPI_INTEGER, jv(1:2 * n:2), myrank + 1, MPI_INTEGER, &
                    0, MPI_COMM_WORLD)
  call check(all(jv(1:2 * myrank + 1:2) == myrank + 1) .and. jv(2) == -1, &
             'MPI_Scatterv into a section')
  iv(1:2 * n:2) = [(100 * myrank + i, i = 0, n - 1)]
  jv = -1
  call MPI_Alltoall(iv(1:2 * n:2), 1, MPI_INTEGER, jv(n:1:-1), 1, MPI_INTEGER, &
                    MPI_COMM_WORLD)
  call check(all(jv(n:1:-1) == [(100 * i + myrank, i = 0, n - 1)]), 'MPI_Alltoall sections')

  ! nonblocking on sections: the results are in place once the requests
  ! complete
  a = [(myrank + i, i = 1, 40)]
  b = -1
  col = -1
  iv = -1
  if (myrank == 0) iv(1:64:8) = [(i, i = 1, 8)]
  call MPI_Iallreduce(a(1:40:4), b(1:40:4), 10, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, reqs(1))
  call MPI_Ibcast(iv(1:64:8), 8, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(2))
  x = myrank
  call MPI_Iallgather(x, 1, MPI_REAL, col(1:2 * n:2), 1, MPI_REAL, &
                      MPI_COMM_WORLD, reqs(3))
  call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE)
  call check(all(b(1:40:4) == [(n * i + n * (n - 1) / 2, i = 1, 40, 4)]), 'MPI_Iallreduce')
  call check(all(b(2:40:4) == -1), 'MPI_Iallreduce: gaps')
  call check(all(iv(1:64:8) == [(i, i = 1, 8)]), 'MPI_Ibcast of a section')
  call check(all(col(1:2 * n:2) == [(i, i = 0, n - 1)]) .and. col(2) == -1, 'MPI_Iallgather')

  ! a persistent broadcast of a section (a datatype describes it, so it can be
  ! started again), started twice with new data
  call MPI_Bcast_init(b(2:20:3), 7, MPI_REAL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, reqs(1))
  do j = 1, 2
    b = -1
    if (myrank == 0) b(2:20:3) = [(10 * j + i, i = 1, 7)]
    call MPI_Start(reqs(1))
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
    call check(all(b(2:20:3) == [(10 * j + i, i = 1, 7)]), 'MPI_Bcast_init of a section')
    if (myrank /= 0) call check(all(b(1:19:3) == -1), 'MPI_Bcast_init: gaps')
  end do
  call MPI_Request_free(reqs(1))

  ! datatypes from Fortran arrays: a 3x4 block of an 8x64 matrix as a
  ! subarray, a row as a vector, rows scattered with a resized vector
  do j = 1, 64
    m(:, j) = [(myrank * 10000 + i * 100 + j, i = 1, 8)]
  end do
  sizes = [8, 64]
  subsizes = [3, 4]
  starts = [2, 5]
  call MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_REAL, sub)
  call MPI_Type_commit(sub)
  a = -1
  call MPI_Sendrecv(m, 1, sub, 0, 0, a, 12, MPI_REAL, 0, 0, MPI_COMM_SELF, &
                    MPI_STATUS_IGNORE)
  call check(all(a(1:12) == [((myrank * 10000 + i * 100 + j, i = 3, 5), j = 6, 9)]), &
             'MPI_Type_create_subarray in Fortran order')
  call MPI_Type_free(sub)
  call MPI_Type_vector(64, 1, 8, MPI_REAL, row)
  call MPI_Type_get_extent(row, lb, ext)
  call check(ext == 4 * (63 * 8 + 1), 'extent of a row')
  call MPI_Type_create_resized(row, 0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND, rowr)
  call MPI_Type_commit(rowr)
  col = -1
  ! each rank gets row myrank+1 (of 8) of the root's matrix: one resized row each
  if (n <= 8) then
    call MPI_Scatter(m, 1, rowr, col, 64, MPI_REAL, 0, MPI_COMM_WORLD)
    call check(all(col == [((myrank + 1) * 100 + j, j = 1, 64)]), 'rows of a matrix scattered')
  end if
  call MPI_Type_free(rowr)
  call MPI_Type_free(row)

  ! neighbours on a periodic ring (1-d Cartesian grid)
  dims = [n, 1]
  periods = [.true., .false.]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart)
  nbr = [myrank, myrank, -7, -7]
  got = -1
  call MPI_Neighbor_alltoall(nbr, 1, MPI_INTEGER, got, 1, MPI_INTEGER, cart)
  call check(got(1) == mod(myrank - 1 + n, n) .and. got(2) == mod(myrank + 1, n), &
             'MPI_Neighbor_alltoall on a ring')
  call MPI_Comm_free(cart)

  call check_finish('f08_coll')
contains
  include 'fcheck.inc'
end program f08_coll
