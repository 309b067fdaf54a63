! f77_coll: every collective through mpif.h (free source form): MPI_BCAST,
! MPI_REDUCE and MPI_ALLREDUCE (with MPI_IN_PLACE, on INTEGER, DOUBLE
! PRECISION, DOUBLE COMPLEX, LOGICAL and MINLOC pairs), MPI_GATHER(V),
! MPI_SCATTER(V), MPI_ALLGATHER(V) (with MPI_IN_PLACE), MPI_ALLTOALL(V,W),
! MPI_REDUCE_SCATTER(_BLOCK), MPI_SCAN, MPI_EXSCAN, MPI_BARRIER; a reduction
! written in Fortran (MPI_OP_CREATE), which gets the program's datatype
! integers; nonblocking collectives, MPI_IALLTOALLW reading its type arrays
! until completion, MPI_COMM_IDUP writing the new communicator at
! completion; persistent collectives (MPI_BCAST_INIT, MPI_ALLREDUCE_INIT)
! started twice; MPI_REDUCE_LOCAL. Any size >= 1.
program f77_coll
  implicit none
  include 'mpif.h'
  integer :: nfail, myrank, nprocs, ierr, i, j, root, n
  integer, allocatable :: sbuf(:), rbuf(:), counts(:), displs(:), types(:)
  integer, allocatable :: rcounts(:), rdispls(:), stypes(:)
  integer :: ival, jval, myop, pairtype, req, reqs(3), newcomm, res
  double precision :: dpair(2), dres(2), x
  double complex :: z, zsum
  logical :: l, lall
  common /opcheck/ pairtype
  external :: pairprod

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, myrank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  n = nprocs
  allocate (sbuf(4 * n), rbuf(4 * n), counts(n), displs(n), types(n))
  allocate (rcounts(n), rdispls(n), stypes(n))

  ! broadcast from the first and the last rank
  do root = 0, nprocs - 1, max(1, nprocs - 1)
    sbuf(1:5) = -1
    if (myrank == root) sbuf(1:5) = [(root * 10 + i, i = 1, 5)]
    call MPI_BCAST(sbuf, 5, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call check(all(sbuf(1:5) == [(root * 10 + i, i = 1, 5)]), 'MPI_BCAST')
  end do

  ! reductions
  ival = myrank + 1
  call MPI_REDUCE(ival, jval, 1, MPI_INTEGER, MPI_SUM, nprocs - 1, MPI_COMM_WORLD, ierr)
  if (myrank == nprocs - 1) call check(jval == n * (n + 1) / 2, 'MPI_REDUCE sum')
  call MPI_ALLREDUCE(ival, jval, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(jval == n, 'MPI_ALLREDUCE max')
  jval = myrank
  call MPI_ALLREDUCE(MPI_IN_PLACE, jval, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(jval == n * (n - 1) / 2, 'MPI_ALLREDUCE in place')
  jval = 2
  if (myrank == 0) then
    call MPI_REDUCE(MPI_IN_PLACE, jval, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
    call check(jval == 2**n, 'MPI_REDUCE in place at the root')
  else
    call MPI_REDUCE(jval, ival, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
  end if
  x = 0.5d0 * myrank
  call MPI_ALLREDUCE(x, dres(1), 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(dres(1) == 0.25d0 * n * (n - 1), 'MPI_ALLREDUCE double')
  z = dcmplx(myrank, 1)
  call MPI_ALLREDUCE(z, zsum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(zsum == dcmplx(n * (n - 1) / 2, n), 'MPI_ALLREDUCE double complex')
  l = myrank /= 0
  call MPI_ALLREDUCE(l, lall, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(lall .eqv. (n > 1), 'MPI_ALLREDUCE LOR on LOGICAL')
  call MPI_ALLREDUCE(.true., lall, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(lall, 'MPI_ALLREDUCE LAND on LOGICAL')
  dpair = [dble(mod(myrank * 7, n)), dble(myrank)]
  call MPI_ALLREDUCE(dpair, dres, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(dres(1) == 0 .and. dres(2) == 0, 'MPI_MINLOC on MPI_2DOUBLE_PRECISION')
  sbuf(1:2) = [myrank, myrank]
  call MPI_ALLREDUCE(sbuf, rbuf, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(rbuf(1) == n - 1 .and. rbuf(2) == n - 1, 'MPI_MAXLOC on MPI_2INTEGER')

  ! a reduction written in Fortran, on a pair type the program built: the
  ! function is called with the program's own integer for it
  call MPI_TYPE_CONTIGUOUS(2, MPI_INTEGER, pairtype, ierr)
  call MPI_TYPE_COMMIT(pairtype, ierr)
  call MPI_OP_CREATE(pairprod, .true., myop, ierr)
  sbuf(1:4) = [myrank + 1, 2, 1, myrank + 1]
  call MPI_ALLREDUCE(sbuf, rbuf, 2, pairtype, myop, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_ALLREDUCE with a Fortran op')
  res = product([(i, i = 1, n)])
  call check(rbuf(1) == res .and. rbuf(2) == 2**n .and. rbuf(4) == res, 'Fortran op result')
  call MPI_OP_FREE(myop, ierr)
  call check(myop == MPI_OP_NULL, 'MPI_OP_FREE')

  ! gathers and scatters, the root in the middle
  root = nprocs / 2
  do i = 1, n
    counts(i) = i
    displs(i) = (i - 1) * i / 2
  end do
  sbuf(1:2) = [myrank, -myrank]
  rbuf = -7
  call MPI_GATHER(sbuf, 2, MPI_INTEGER, rbuf, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (myrank == root) call check(all(rbuf(1:2 * n:2) == [(i, i = 0, n - 1)]), 'MPI_GATHER')
  sbuf(1:myrank + 1) = myrank
  deallocate (rbuf)
  allocate (rbuf(n * (n + 1) / 2 + 1))
  rbuf = -7
  call MPI_GATHERV(sbuf, myrank + 1, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, root, &
                   MPI_COMM_WORLD, ierr)
  if (myrank == root) then
    do i = 1, n
      call check(all(rbuf(displs(i) + 1:displs(i) + i) == i - 1), 'MPI_GATHERV block')
    end do
    call check(rbuf(n * (n + 1) / 2 + 1) == -7, 'MPI_GATHERV leaves the tail')
  end if
  if (myrank == root) rbuf(1:n * (n + 1) / 2) = [((i, j = 1, i), i = 1, n)]
  sbuf = -1
  call MPI_SCATTERV(rbuf, counts, displs, MPI_INTEGER, sbuf, myrank + 1, MPI_INTEGER, root, &
                    MPI_COMM_WORLD, ierr)
  call check(all(sbuf(1:myrank + 1) == myrank + 1) .and. sbuf(myrank + 2) == -1, 'MPI_SCATTERV')
  deallocate (rbuf)
  allocate (rbuf(4 * n))
  if (myrank == root) rbuf(1:n) = [(10 * i, i = 1, n)]
  call MPI_SCATTER(rbuf, 1, MPI_INTEGER, ival, 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call check(ival == 10 * (myrank + 1), 'MPI_SCATTER')

  ! allgathers, one in place
  call MPI_ALLGATHER(myrank, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(rbuf(1:n) == [(i, i = 0, n - 1)]), 'MPI_ALLGATHER')
  rbuf = -1
  rbuf(myrank + 1) = 3 * myrank
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 1, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  call check(all(rbuf(1:n) == [(3 * i, i = 0, n - 1)]), 'MPI_ALLGATHER in place')
  counts = 1
  displs = [(2 * i, i = 0, n - 1)]
  rbuf = -1
  call MPI_ALLGATHERV(myrank + 5, 1, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
  call check(all(rbuf(1:2 * n:2) == [(i + 5, i = 0, n - 1)]) .and. all(rbuf(2:2 * n:2) == -1), &
             'MPI_ALLGATHERV')

  ! all-to-all: plain, v and w (one type per peer)
  sbuf(1:n) = [(myrank * 100 + i, i = 0, n - 1)]
  call MPI_ALLTOALL(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(rbuf(1:n) == [(i * 100 + myrank, i = 0, n - 1)]), 'MPI_ALLTOALL')
  counts = 1
  displs = [(i, i = 0, n - 1)]
  rdispls = [(n - 1 - i, i = 0, n - 1)]
  call MPI_ALLTOALLV(sbuf, counts, displs, MPI_INTEGER, rbuf, counts, rdispls, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  call check(all(rbuf(1:n) == [(j * 100 + myrank, j = n - 1, 0, -1)]), 'MPI_ALLTOALLV')
  types = MPI_INTEGER
  stypes = MPI_INTEGER
  displs = [(4 * i, i = 0, n - 1)]
  call MPI_ALLTOALLW(sbuf, counts, displs, stypes, rbuf, counts, displs, types, &
                     MPI_COMM_WORLD, ierr)
  call check(all(rbuf(1:n) == [(i * 100 + myrank, i = 0, n - 1)]), 'MPI_ALLTOALLW')

  ! reduce-scatter, scans
  sbuf(1:n) = [(myrank + i, i = 1, n)]
  counts = 1
  call MPI_REDUCE_SCATTER(sbuf, ival, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ival == n * (n - 1) / 2 + n * (myrank + 1), 'MPI_REDUCE_SCATTER')
  call MPI_REDUCE_SCATTER_BLOCK(sbuf, jval, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(jval == ival, 'MPI_REDUCE_SCATTER_BLOCK')
  call MPI_SCAN(myrank + 1, ival, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ival == (myrank + 1) * (myrank + 2) / 2, 'MPI_SCAN')
  call MPI_EXSCAN(myrank + 1, ival, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (myrank > 0) call check(ival == myrank * (myrank + 1) / 2, 'MPI_EXSCAN')
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_BARRIER')

  ! nonblocking: the type arrays of MPI_IALLTOALLW are read until completion,
  ! so change the program's copy at once; MPI_COMM_IDUP's communicator
  ! arrives with its completion
  sbuf(1:n) = [(myrank * 100 + i, i = 0, n - 1)]
  rbuf = -1
  types = MPI_INTEGER
  call MPI_IALLTOALLW(sbuf, counts, displs, types, rbuf, counts, displs, types, &
                      MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_COMM_IDUP(MPI_COMM_WORLD, newcomm, reqs(2), ierr)
  ival = myrank + 1
  call MPI_IALLREDUCE(ival, jval, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_WAITALL(3, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'nonblocking collectives complete')
  call MPI_F_SYNC_REG(rbuf, ierr)
  call MPI_F_SYNC_REG(jval, ierr)
  call check(all(rbuf(1:n) == [(i * 100 + myrank, i = 0, n - 1)]), 'MPI_IALLTOALLW')
  call check(jval == n * (n + 1) / 2, 'MPI_IALLREDUCE')
  call MPI_COMM_COMPARE(newcomm, MPI_COMM_WORLD, res, ierr)
  call check(res == MPI_CONGRUENT, 'MPI_COMM_IDUP gives a congruent communicator')
  call MPI_BARRIER(newcomm, ierr)
  call MPI_COMM_FREE(newcomm, ierr)
  call check(newcomm == MPI_COMM_NULL, 'MPI_COMM_FREE')
  sbuf(1:3) = -1
  if (myrank == 0) sbuf(1:3) = [7, 8, 9]
  call MPI_IBCAST(sbuf, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call MPI_F_SYNC_REG(sbuf, ierr)
  call check(all(sbuf(1:3) == [7, 8, 9]), 'MPI_IBCAST')
  call MPI_IBARRIER(MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call MPI_IEXSCAN(myrank + 1, ival, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call MPI_F_SYNC_REG(ival, ierr)
  if (myrank > 0) call check(ival == myrank * (myrank + 1) / 2, 'MPI_IEXSCAN')

  ! persistent collectives, started twice with new data; a local reduction
  call MPI_BCAST_INIT(sbuf, 2, MPI_INTEGER, n - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &
                      reqs(1), ierr)
  call MPI_ALLREDUCE_INIT(ival, jval, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, reqs(2), ierr)
  do i = 1, 2
    sbuf(1:2) = -1
    if (myrank == n - 1) sbuf(1:2) = [i, 10 * i]
    ival = myrank * i
    call MPI_F_SYNC_REG(sbuf, ierr)
    call MPI_F_SYNC_REG(ival, ierr)
    call MPI_STARTALL(2, reqs, ierr)
    call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
    call MPI_F_SYNC_REG(sbuf, ierr)
    call MPI_F_SYNC_REG(jval, ierr)
    call check(sbuf(1) == i .and. sbuf(2) == 10 * i, 'MPI_BCAST_INIT')
    call check(jval == i * n * (n - 1) / 2, 'MPI_ALLREDUCE_INIT')
  end do
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(2), ierr)
  sbuf(1:3) = [1, 2, 3]
  rbuf(1:3) = [4, 5, 6]
  call MPI_REDUCE_LOCAL(sbuf, rbuf, 3, MPI_INTEGER, MPI_PROD, ierr)
  call check(all(rbuf(1:3) == [4, 10, 18]), 'MPI_REDUCE_LOCAL')
  call MPI_TYPE_FREE(pairtype, ierr)

  call check_finish('f77_coll')
contains
  include 'fcheck.inc'
end program f77_coll

! (a1, b1) * (a2, b2) element by element, on pairs of integers; the datatype
! must be the pair type of the program
subroutine pairprod(invec, inoutvec, len, datatype)
  implicit none
  include 'mpif.h'
  integer :: len, datatype, i, pairtype
  integer :: invec(2 * len), inoutvec(2 * len)
  common /opcheck/ pairtype
  if (datatype /= pairtype) then
    write (0, *) 'pairprod: datatype', datatype, ' is not the pair type', pairtype
    inoutvec = -999
    return
  end if
  do i = 1, 2 * len
    inoutvec(i) = invec(i) * inoutvec(i)
  end do
end subroutine pairprod
