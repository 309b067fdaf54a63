! ring.f90: the README tour's ring (examples/ring.c) in Fortran 2008, through the mpi_f08
! module (isthmus-fc). A token goes around the ring of all ranks LAPS times, each rank
! adding its rank number, so with ranks on several sites it crosses every site boundary
! on every lap; then an array of 131072 integers goes around once and is checked. Rank 0
! prints "ring: ok" only if every rank's check passed; otherwise the program stops with 1.
!
! usage: ring_f [LAPS]   (default 10)
program ring
  use mpi_f08
  implicit none
  integer, parameter :: n = 131072
  integer :: rank, size, next, prev, lap, laps, token, want, ok, all_ok, i, ios
  integer, allocatable :: big(:)
  character(len=32) :: arg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  laps = 10
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *, iostat=ios) laps
    if (ios /= 0 .or. laps < 0) then
      if (rank == 0) write (*, '(3a)') 'ring_f: LAPS ', trim(arg), ': expected a whole number from 0'
      call MPI_Abort(MPI_COMM_WORLD, 2)
    end if
  end if
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)
  ok = 1

  ! after a lap rank 0 holds 0 + 1 + ... + size-1
  want = size * (size - 1) / 2
  do lap = 1, laps
    token = 0
    if (rank == 0) then
      call MPI_Send(token, 1, MPI_INTEGER, next, 1, MPI_COMM_WORLD)
      call MPI_Recv(token, 1, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      if (token /= want) ok = 0
    else
      call MPI_Recv(token, 1, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      token = token + rank
      call MPI_Send(token, 1, MPI_INTEGER, next, 1, MPI_COMM_WORLD)
    end if
  end do

  ! one lap of the array: rank 0 fills it, every other rank checks it before passing it on
  allocate (big(n))
  if (rank == 0) then
    big = [(i * 7 + 1, i = 1, n)]
    call MPI_Send(big, n, MPI_INTEGER, next, 2, MPI_COMM_WORLD)
    big = 0
    call MPI_Recv(big, n, MPI_INTEGER, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  else
    call MPI_Recv(big, n, MPI_INTEGER, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call MPI_Send(big, n, MPI_INTEGER, next, 2, MPI_COMM_WORLD)
  end if
  do i = 1, n
    if (big(i) /= i * 7 + 1) then
      ok = 0
      exit
    end if
  end do

  call MPI_Allreduce(ok, all_ok, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD)
  if (rank == 0 .and. all_ok == 1) write (*, '(a,i0,a)') 'ring: ok (', size, ' ranks)'
  call MPI_Finalize()
  if (all_ok /= 1) stop 1
end program ring
