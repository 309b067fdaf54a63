! f08_p2p: point-to-point through `use mpi_f08` with array sections, which
! reach the library as they are (MPI_SUBARRAYS_SUPPORTED): strided and 2-d
! sections sent and received blocking, nonblocking and persistent, with a
! datatype of one element (described by a datatype) and with others (MPI_BYTE
! counts, a pair of elements: copied, written back at completion); fewer
! elements than the section holds; scalars and
! character strings; TYPE(MPI_Status) fields, MPI_STATUS(ES)_IGNORE, handle
! comparisons, ierror left out, large counts (INTEGER(KIND=MPI_COUNT_KIND)),
! matched probes, MPI_Status_f2f08/f082f. Any size >= 1.
program f08_p2p
  use mpi_f08
  implicit none
  integer :: nfail, myrank, nprocs, ierr, to, from, i, n, j
  real, asynchronous :: a(20), b(20), c(4, 5), d(10, 10)
  real, asynchronous :: e(20), g(30)
  type(MPI_Status) :: status, stats(4)
  type(MPI_Request) :: reqs(4), req
  type(MPI_Datatype) :: pair
  type(MPI_Message) :: msg
  type(MPI_Comm) :: comm
  integer(kind=MPI_COUNT_KIND) :: n8
  character(len=8) :: word, got
  character(len=4) :: names(6), gotnames(6)
  integer :: fst(MPI_STATUS_SIZE), idx
  logical :: flag

  nfail = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call check(ierr == MPI_SUCCESS, 'ierror given')
  to = mod(myrank + nprocs / 2, nprocs)
  from = mod(myrank - nprocs / 2 + nprocs, nprocs)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm)
  call check(comm /= MPI_COMM_WORLD .and. .not. (comm == MPI_COMM_NULL), 'handle comparisons')

  ! a strided section to a strided section: every other element
  a = [(myrank * 100 + i, i = 1, 20)]
  b = -1
  call MPI_Irecv(b(2:20:2), 10, MPI_REAL, from, 1, comm, req)
  call MPI_Send(a(1:20:2), 10, MPI_REAL, to, 1, comm)
  call MPI_Wait(req, status)
  call check(req == MPI_REQUEST_NULL, 'MPI_Wait frees the request')
  call check(status%MPI_SOURCE == from .and. status%MPI_TAG == 1, 'TYPE(MPI_Status) fields')
  call MPI_Get_count(status, MPI_REAL, n)
  call check(n == 10, 'MPI_Get_count of a section')
  call check(all(b(2:20:2) == [(from * 100 + i, i = 1, 20, 2)]), 'strided to strided')
  call check(all(b(1:19:2) == -1), 'the gaps stay untouched')

  ! 2-d: a block of a matrix to a contiguous array and back into a column
  do j = 1, 10
    d(:, j) = [(myrank * 1000 + i * 10 + j, i = 1, 10)]
  end do
  c = -1
  call MPI_Sendrecv(d(2:5, 3:7), 20, MPI_REAL, to, 2, c, 20, MPI_REAL, from, 2, comm, &
                    MPI_STATUS_IGNORE)
  call check(all(c == real(reshape([((from * 1000 + i * 10 + j, i = 2, 5), j = 3, 7)], &
                                   [4, 5]))), '2-d block sent as it is')
  g = -1
  call MPI_Sendrecv(a(1:10), 10, MPI_REAL, to, 3, g(1:30:3), 10, MPI_REAL, from, 3, comm, &
                    status)
  call MPI_Get_count(status, MPI_REAL, n)
  call check(n == 10, 'received 10 into a section of 10')
  call check(all(g(1:30:3) == [(from * 100 + i, i = 1, 10)]), 'received into a section')
  call check(all(g(2:30:3) == -1) .and. all(g(3:30:3) == -1), 'strided receive leaves gaps')

  ! nonblocking on sections, both ways at once
  a = [(myrank * 100 + i, i = 1, 20)]
  b = -1
  e = -1
  call MPI_Irecv(b(20:1:-2), 10, MPI_REAL, from, 4, comm, reqs(1))
  call MPI_Irecv(e(1:5), 5, MPI_REAL, from, 5, comm, reqs(2))
  call MPI_Isend(a(1:20:2), 10, MPI_REAL, to, 4, comm, reqs(3))
  call MPI_Isend(a(2:20:4), 5, MPI_REAL, to, 5, comm, reqs(4))
  call MPI_Waitall(4, reqs, stats)
  call check(all(reqs == MPI_REQUEST_NULL), 'MPI_Waitall frees')
  call check(all(b(20:1:-2) == [(from * 100 + i, i = 1, 20, 2)]), 'into a reversed section')
  call check(all(e(1:5) == [(from * 100 + i, i = 2, 20, 4)]), 'from a section of stride 4')
  call check(stats(2)%MPI_TAG == 5, 'statuses of MPI_Waitall')

  ! datatypes that are not one element: the section is copied, and a receive
  ! is written back when it completes (here: by MPI_Test, then MPI_Waitany)
  b = -1
  call MPI_Irecv(b(1:20:2), 40, MPI_BYTE, from, 6, comm, req)
  call MPI_Send(a(1:20:2), 40, MPI_BYTE, to, 6, comm)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, status)
  end do
  call check(all(b(1:20:2) == [(from * 100 + i, i = 1, 20, 2)]), 'MPI_BYTE into a section')
  call check(all(b(2:20:2) == -1), 'MPI_BYTE into a section: gaps kept')
  call MPI_Type_contiguous(2, MPI_REAL, pair)
  call MPI_Type_commit(pair)
  b = -1
  reqs(1) = MPI_REQUEST_NULL
  call MPI_Irecv(b(1:12:3), 2, pair, from, 7, comm, reqs(2))
  call MPI_Send(a(20:1:-5), 2, pair, to, 7, comm)
  call MPI_Waitany(2, reqs, idx, status)
  call check(idx == 2, 'MPI_Waitany: index from 1')
  call check(all(b(1:12:3) == [(from * 100 + i, i = 20, 1, -5)]), 'pairs through a section')
  call check(b(2) == -1 .and. b(13) == -1, 'pairs: the rest untouched')
  call MPI_Type_free(pair)

  ! fewer elements than the section, and more (an error)
  b = -1
  call MPI_Sendrecv(a(1:20:4), 3, MPI_REAL, to, 8, b(1:20:4), 5, MPI_REAL, from, 8, comm, &
                    status)
  call MPI_Get_count(status, MPI_REAL, n)
  call check(n == 3 .and. all(b(1:9:4) == [(from * 100 + i, i = 1, 9, 4)]), &
             'the first 3 of a section of 5')
  call check(b(13) == -1, 'and not the 4th')

  ! persistent requests on sections, started twice
  call MPI_Recv_init(b(2:20:2), 10, MPI_REAL, from, 10, comm, reqs(1))
  call MPI_Send_init(a(1:20:2), 10, MPI_REAL, to, 10, comm, reqs(2))
  do j = 1, 2
    a = [(myrank * 100 + i + j, i = 1, 20)]
    b = -1
    call MPI_Startall(2, reqs)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    call check(all(b(2:20:2) == [(from * 100 + i + j, i = 1, 20, 2)]), 'persistent sections')
    call check(all(b(1:19:2) == -1), 'persistent sections: gaps')
  end do
  call MPI_Request_free(reqs(1))
  call MPI_Request_free(reqs(2))

  ! large count, scalars, character strings
  n8 = 10
  b = -1
  call MPI_Irecv(b(1:20:2), n8, MPI_REAL, from, 11, comm, req)
  call MPI_Send(a(2:20:2), n8, MPI_REAL, to, 11, comm)
  call MPI_Wait(req, status)
  call MPI_Get_count(status, MPI_REAL, n8)
  call check(n8 == 10 .and. b(19) == from * 100 + 20 + 2, 'large-count forms')
  word = 'fortran' // achar(48 + mod(myrank, 10))
  call MPI_Sendrecv(word, 8, MPI_CHARACTER, to, 12, got, 8, MPI_CHARACTER, from, 12, comm, &
                    MPI_STATUS_IGNORE)
  call check(got == 'fortran' // achar(48 + mod(from, 10)), 'a CHARACTER scalar')
  names = ['aaaa', 'bbbb', 'cccc', 'dddd', 'eeee', 'ffff']
  gotnames = '----'
  call MPI_Sendrecv(names(1:6:2), 12, MPI_CHARACTER, to, 13, gotnames(2:6:2), 12, &
                    MPI_CHARACTER, from, 13, comm, MPI_STATUS_IGNORE)
  call check(all(gotnames == ['----', 'aaaa', '----', 'cccc', '----', 'eeee']), &
             'sections of CHARACTER(LEN=4)')
  n = myrank
  call MPI_Sendrecv_replace(n, 1, MPI_INTEGER, to, 14, from, 14, comm, MPI_STATUS_IGNORE)
  call check(n == from, 'MPI_Sendrecv_replace of a scalar')
  a = [(myrank * 100 + i, i = 1, 20)]
  call MPI_Sendrecv_replace(a(1:20:5), 4, MPI_REAL, to, 15, from, 15, comm, status)
  call check(all(a(1:20:5) == [(from * 100 + i, i = 1, 20, 5)]) .and. &
             a(2) == myrank * 100 + 2, 'MPI_Sendrecv_replace of a section')

  ! matched probe, then receive into a section
  b = -1
  call MPI_Isend(a(1:4), 4, MPI_REAL, to, 16, comm, req)
  call MPI_Mprobe(from, 16, comm, msg, status)
  call check(msg /= MPI_MESSAGE_NULL, 'MPI_Mprobe gives a message')
  call MPI_Mrecv(b(1:8:2), 4, MPI_REAL, msg, status)
  call check(msg == MPI_MESSAGE_NULL, 'MPI_Mrecv consumes it')
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check(b(7) == from * 100 + 4 .and. b(8) == -1, 'MPI_Mrecv into a section')

  ! status conversions
  call MPI_Status_f082f(status, fst)
  call check(fst(MPI_SOURCE) == from .and. fst(MPI_TAG) == 16, 'MPI_Status_f082f')
  fst(MPI_TAG) = 99
  call MPI_Status_f2f08(fst, status)
  call check(status%MPI_TAG == 99, 'MPI_Status_f2f08')

  call MPI_Comm_free(comm)
  call check(comm == MPI_COMM_NULL, 'MPI_Comm_free')
  call check_finish('f08_p2p')
contains
  include 'fcheck.inc'
end program f08_p2p
