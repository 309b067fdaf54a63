! f77_p2p: point-to-point through mpif.h (fixed source form): MPI_SEND/
! MPI_RECV near and far with statuses (MPI_SOURCE, MPI_TAG, MPI_ERROR
! untouched, MPI_GET_COUNT) and MPI_STATUS_IGNORE; MPI_ISEND/MPI_IRECV
! completed by MPI_WAITALL (statuses and MPI_STATUSES_IGNORE), MPI_WAITANY
! and MPI_TESTSOME (indices count from 1), MPI_TEST's LOGICAL flag;
! MPI_IPROBE and MPI_PROBE; MPI_SENDRECV_REPLACE; a struct datatype of
! absolute addresses (MPI_GET_ADDRESS) sent from and received at
! MPI_BOTTOM; MPI_SSEND and MPI_BSEND with MPI_BUFFER_ATTACH/DETACH;
! persistent requests (MPI_SEND_INIT, MPI_RECV_INIT, MPI_STARTALL);
! many requests in a loop. Any size >= 1.
      program f77_p2p
      implicit none
      include 'mpif.h'
      integer nfail, myrank, nprocs, ierr, to, from, i, k, it
      integer status(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 4)
      integer reqs(4), idx, outcount, indices(4), cnt, done
      double precision sbuf(1000), rbuf(1010)
      integer ival(3), jval(3), kval(5), dtype, rtype
      integer blens(2), types(2)
      integer(kind=MPI_ADDRESS_KIND) disps(2)
      double precision dval, eval
      logical flag
      integer bsize
      character*1 bbuf(100000)
      nfail = 0
      call MPI_INIT(ierr)
      call check(ierr .eq. MPI_SUCCESS, 'MPI_INIT returns MPI_SUCCESS')
      call MPI_COMM_RANK(MPI_COMM_WORLD, myrank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
      to = mod(myrank + nprocs / 2, nprocs)
      from = mod(myrank - nprocs / 2 + nprocs, nprocs)

! blocking, far: everyone posts a nonblocking receive first
      do i = 1, 1000
         sbuf(i) = myrank * 10000 + i
      end do
      do i = 1, 1010
         rbuf(i) = -1
      end do
      status(MPI_ERROR) = 12345
      call MPI_IRECV(rbuf, 1010, MPI_DOUBLE_PRECISION, from, 5,
     &               MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_SEND(sbuf, 1000, MPI_DOUBLE_PRECISION, to, 5,
     &              MPI_COMM_WORLD, ierr)
      call MPI_WAIT(reqs(1), status, ierr)
      call check(reqs(1) .eq. MPI_REQUEST_NULL, 'wait frees request')
      call check(status(MPI_SOURCE) .eq. from, 'status MPI_SOURCE')
      call check(status(MPI_TAG) .eq. 5, 'status MPI_TAG')
      call check(status(MPI_ERROR) .eq. 12345, 'MPI_ERROR untouched')
      call MPI_GET_COUNT(status, MPI_DOUBLE_PRECISION, cnt, ierr)
      call check(cnt .eq. 1000, 'MPI_GET_COUNT')
      call check(rbuf(1) .eq. from * 10000 + 1, 'first element')
      call check(rbuf(1000) .eq. from * 10000 + 1000, 'last element')
      call check(rbuf(1001) .eq. -1, 'tail untouched')

! sendrecv_replace with MPI_STATUS_IGNORE
      ival(1) = myrank
      ival(2) = 7
      ival(3) = -myrank
      call MPI_SENDRECV_REPLACE(ival, 3, MPI_INTEGER, to, 6, from, 6,
     &     MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call check(ival(1) .eq. from .and. ival(3) .eq. -from,
     &           'MPI_SENDRECV_REPLACE')

! nonblocking: two receives, two sends, MPI_WAITALL with statuses
      call MPI_IRECV(jval, 1, MPI_INTEGER, from, 10, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      call MPI_IRECV(jval(2), 2, MPI_INTEGER, from, 11,
     &               MPI_COMM_WORLD, reqs(2), ierr)
      ival(1) = 100 + myrank
      ival(2) = 200 + myrank
      ival(3) = 300 + myrank
      call MPI_ISEND(ival, 1, MPI_INTEGER, to, 10, MPI_COMM_WORLD,
     &               reqs(3), ierr)
      call MPI_ISEND(ival(2), 2, MPI_INTEGER, to, 11, MPI_COMM_WORLD,
     &               reqs(4), ierr)
      call MPI_WAITALL(4, reqs, stats, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'MPI_WAITALL')
      do i = 1, 4
         call check(reqs(i) .eq. MPI_REQUEST_NULL, 'waitall frees')
      end do
      call check(stats(MPI_TAG, 1) .eq. 10, 'statuses(1) tag')
      call check(stats(MPI_TAG, 2) .eq. 11, 'statuses(2) tag')
      call check(stats(MPI_SOURCE, 2) .eq. from, 'statuses(2) src')
      call MPI_GET_COUNT(stats(1, 2), MPI_INTEGER, cnt, ierr)
      call check(cnt .eq. 2, 'count from a column of statuses')
      call check(jval(1) .eq. 100 + from .and. jval(3) .eq. 300 + from,
     &           'MPI_WAITALL data')

! MPI_WAITANY: indices count from 1; then MPI_STATUSES_IGNORE
      call MPI_IRECV(jval, 1, MPI_INTEGER, from, 12, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      reqs(2) = MPI_REQUEST_NULL
      call MPI_ISEND(ival, 1, MPI_INTEGER, to, 12, MPI_COMM_WORLD,
     &               reqs(3), ierr)
      done = 0
      do k = 1, 2
         call MPI_WAITANY(3, reqs, idx, status, ierr)
         call check(idx .eq. 1 .or. idx .eq. 3, 'MPI_WAITANY index')
         if (idx .eq. 1) done = done + 1
         if (idx .eq. 3) done = done + 10
      end do
      call check(done .eq. 11, 'MPI_WAITANY completes both')
      call MPI_WAITANY(3, reqs, idx, status, ierr)
      call check(idx .eq. MPI_UNDEFINED, 'WAITANY on nulls: UNDEFINED')

! MPI_TESTSOME until both complete; MPI_TEST's flag
      call MPI_IRECV(jval, 1, MPI_INTEGER, from, 13, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      call MPI_ISEND(ival, 1, MPI_INTEGER, to, 13, MPI_COMM_WORLD,
     &               reqs(2), ierr)
      done = 0
      do while (done .lt. 2)
         call MPI_TESTSOME(2, reqs, outcount, indices, stats, ierr)
         if (outcount .ne. MPI_UNDEFINED) then
            do i = 1, outcount
               call check(indices(i) .ge. 1 .and. indices(i) .le. 2,
     &                    'MPI_TESTSOME index from 1')
               call check(reqs(indices(i)) .eq. MPI_REQUEST_NULL,
     &                    'MPI_TESTSOME frees the completed')
            end do
            done = done + outcount
         end if
      end do
      call MPI_TEST(reqs(1), flag, status, ierr)
      call check(flag, 'MPI_TEST on MPI_REQUEST_NULL gives .TRUE.')

! probes: LOGICAL flag of MPI_IPROBE, then MPI_PROBE and the count
      call MPI_ISEND(sbuf, 7, MPI_DOUBLE_PRECISION, 0, 14,
     &               MPI_COMM_SELF, reqs(3), ierr)
      flag = .false.
      do while (.not. flag)
         call MPI_IPROBE(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF,
     &                   flag, status, ierr)
      end do
      call check(status(MPI_TAG) .eq. 14, 'MPI_IPROBE status')
      call MPI_PROBE(0, 14, MPI_COMM_SELF, status, ierr)
      call MPI_GET_COUNT(status, MPI_DOUBLE_PRECISION, cnt, ierr)
      call check(cnt .eq. 7, 'MPI_PROBE count')
      call MPI_RECV(rbuf, 7, MPI_DOUBLE_PRECISION, 0, 14,
     &              MPI_COMM_SELF, MPI_STATUS_IGNORE, ierr)
      call MPI_WAIT(reqs(3), MPI_STATUS_IGNORE, ierr)
      call MPI_IPROBE(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF,
     &                flag, status, ierr)
      call check(.not. flag, 'MPI_IPROBE .FALSE. when nothing is left')

! a struct of absolute addresses, sent from and received at MPI_BOTTOM:
! the three integers go out as a struct and come back as plain integers
! (and the other way round), then both parts go far
      ival(1) = myrank
      ival(2) = 2 * myrank
      ival(3) = 3 * myrank
      dval = myrank + 0.5d0
      call MPI_GET_ADDRESS(ival, disps(1), ierr)
      call MPI_GET_ADDRESS(dval, disps(2), ierr)
      blens(1) = 3
      blens(2) = 1
      types(1) = MPI_INTEGER
      types(2) = MPI_DOUBLE_PRECISION
      call MPI_TYPE_CREATE_STRUCT(2, blens, disps, types, dtype, ierr)
      call MPI_TYPE_COMMIT(dtype, ierr)
      call MPI_SENDRECV(MPI_BOTTOM, 1, dtype, 0, 17, kval, 5,
     &     MPI_INTEGER, 0, 17, MPI_COMM_SELF, status, ierr)
      call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
      call check(cnt .eq. 5, 'a struct of 3 integers and a double')
      call check(kval(3) .eq. 3 * myrank, 'MPI_BOTTOM struct sent')
      ival(1) = -1
      dval = -1
      call MPI_SENDRECV(kval, 5, MPI_INTEGER, 0, 18, MPI_BOTTOM, 1,
     &     dtype, 0, 18, MPI_COMM_SELF, status, ierr)
! MPI wrote them behind the compiler's back (MPI 4.1 section 19.1.17)
      call MPI_F_SYNC_REG(ival, ierr)
      call MPI_F_SYNC_REG(dval, ierr)
      call check(ival(1) .eq. myrank .and. ival(3) .eq. 3 * myrank,
     &           'MPI_BOTTOM struct received: integers')
      call check(dval .eq. myrank + 0.5d0, 'MPI_BOTTOM struct: double')
      call MPI_GET_ADDRESS(jval, disps(1), ierr)
      call MPI_GET_ADDRESS(eval, disps(2), ierr)
      call MPI_TYPE_CREATE_STRUCT(2, blens, disps, types, rtype, ierr)
      call MPI_TYPE_COMMIT(rtype, ierr)
      call MPI_IRECV(MPI_BOTTOM, 1, rtype, from, 15, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      call MPI_SEND(MPI_BOTTOM, 1, dtype, to, 15, MPI_COMM_WORLD, ierr)
      call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
      call MPI_F_SYNC_REG(jval, ierr)
      call MPI_F_SYNC_REG(eval, ierr)
      call check(jval(2) .eq. 2 * from .and. eval .eq. from + 0.5d0,
     &           'struct far, MPI_BOTTOM at both ends')
      call MPI_TYPE_FREE(rtype, ierr)
      call MPI_TYPE_FREE(dtype, ierr)
      call check(dtype .eq. MPI_DATATYPE_NULL, 'MPI_TYPE_FREE nulls')

! synchronous and buffered sends
      call MPI_IRECV(jval, 1, MPI_INTEGER, from, 18, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      call MPI_SSEND(myrank, 1, MPI_INTEGER, to, 18, MPI_COMM_WORLD,
     &               ierr)
      call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
      call check(jval(1) .eq. from, 'MPI_SSEND')
      call MPI_PACK_SIZE(1000, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD,
     &                   bsize, ierr)
      bsize = bsize + MPI_BSEND_OVERHEAD
      call MPI_BUFFER_ATTACH(bbuf, bsize, ierr)
      call MPI_BSEND(sbuf, 1000, MPI_DOUBLE_PRECISION, to, 19,
     &               MPI_COMM_WORLD, ierr)
      call MPI_RECV(rbuf, 1000, MPI_DOUBLE_PRECISION, from, 19,
     &              MPI_COMM_WORLD, status, ierr)
      call MPI_BUFFER_DETACH(bbuf, bsize, ierr)
      call check(rbuf(500) .eq. from * 10000 + 500, 'MPI_BSEND data')

! persistent requests, started three times
      call MPI_RECV_INIT(jval, 1, MPI_INTEGER, from, 20,
     &                   MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_SEND_INIT(ival, 1, MPI_INTEGER, to, 20, MPI_COMM_WORLD,
     &                   reqs(2), ierr)
      do it = 1, 3
         ival(1) = myrank * 100 + it
         call MPI_F_SYNC_REG(ival, ierr)
         call MPI_STARTALL(2, reqs, ierr)
         call MPI_WAITALL(2, reqs, stats, ierr)
         call MPI_F_SYNC_REG(jval, ierr)
         call check(jval(1) .eq. from * 100 + it, 'persistent data')
         call check(reqs(1) .ne. MPI_REQUEST_NULL,
     &              'a persistent request stays after MPI_WAITALL')
      end do
      call MPI_REQUEST_FREE(reqs(1), ierr)
      call MPI_REQUEST_FREE(reqs(2), ierr)
      call check(reqs(1) .eq. MPI_REQUEST_NULL, 'MPI_REQUEST_FREE')

! many requests: each completion gives its integer back
      do it = 1, 2000
         call MPI_IRECV(jval, 1, MPI_INTEGER, from, 21,
     &                  MPI_COMM_WORLD, reqs(1), ierr)
         call MPI_ISEND(it, 1, MPI_INTEGER, to, 21, MPI_COMM_WORLD,
     &                  reqs(2), ierr)
         call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
         if (jval(1) .ne. it) call check(.false., 'loop data')
      end do

      call check_finish('f77_p2p')
      contains
      include 'fcheck.inc'
      end program f77_p2p
