! f90_rma: one-sided communication through `use mpi`: a window over a
! Fortran array from MPI_Win_create, MPI_Put to the right neighbour and
! MPI_Get back between fences, MPI_Accumulate from every rank into rank 0
! under shared locks, MPI_Win_get_attr(MPI_WIN_SIZE). The window's memory is
! read after MPI_F_sync_reg, as the standard asks of `use mpi` programs (the
! compiler may otherwise keep a value the library changed). Any size >= 1.
program f90_rma
  use mpi
  implicit none
  integer, parameter :: K = 8
  integer :: nfail, myrank, nprocs, i, right, left, win, ierr
  integer :: vals(K), got(K), one
  integer, target :: local(K)
  integer(kind=MPI_ADDRESS_KIND) :: sz, disp, wsize
  logical :: flag

  nfail = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(myrank + 1, nprocs)
  left = mod(myrank + nprocs - 1, nprocs)
  local = -1
  sz = K * 4
  call MPI_Win_create(local, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call check(ierr == MPI_SUCCESS, 'win_create')
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, wsize, flag, ierr)
  call check(flag .and. wsize == sz, 'MPI_WIN_SIZE')
  call MPI_Win_fence(0, win, ierr)
  vals = [(myrank * 100 + i, i = 1, K)]
  disp = 0
  call MPI_Put(vals, K, MPI_INTEGER, right, disp, K, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_F_sync_reg(local)
  do i = 1, K
    call check(local(i) == left * 100 + i, 'put between fences')
  end do
  got = -1
  call MPI_Get(got, K, MPI_INTEGER, right, disp, K, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  do i = 1, K
    call check(got(i) == myrank * 100 + i, 'get between fences')
  end do
  local = 0
  call MPI_F_sync_reg(local)
  call MPI_Win_fence(MPI_MODE_NOSUCCEED, win, ierr)
  one = 1
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win, ierr)
  call MPI_Accumulate(one, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_unlock(0, win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (myrank == 0) then
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
    call MPI_F_sync_reg(local)
    call check(local(1) == nprocs, 'accumulate from every rank')
    call MPI_Win_unlock(0, win, ierr)
  end if
  call MPI_Win_free(win, ierr)
  call check(ierr == MPI_SUCCESS, 'win_free')
  call check_finish('f90_rma')
contains
  include 'fcheck.inc'
end program f90_rma
