! f08_rma: one-sided communication through `use mpi_f08`. A window from
! MPI_Win_allocate (its TYPE(C_PTR) base made a Fortran pointer): MPI_Put to
! the right neighbour and MPI_Get back between fences; MPI_Accumulate and
! MPI_Fetch_and_op from every rank into rank 0 under shared locks;
! MPI_Compare_and_swap from every rank on one cell in a lock_all epoch
! (exactly one wins); a window over a Fortran array from MPI_Win_create.
! Any size >= 1.
program f08_rma
  use mpi_f08
  use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer
  implicit none
  integer, parameter :: K = 8
  integer :: nfail, myrank, nprocs, i, right, left, won, wins, val, cmp
  integer, asynchronous :: vals(K), got(K), one, old, res
  integer, asynchronous, target :: local(K)
  integer, pointer :: mem(:)
  type(MPI_Win) :: win, win2
  type(c_ptr) :: base
  integer(kind=MPI_ADDRESS_KIND) :: sz

  nfail = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  right = mod(myrank + 1, nprocs)
  left = mod(myrank + nprocs - 1, nprocs)

  sz = K * 4
  call MPI_Win_allocate(sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win)
  call c_f_pointer(base, mem, [K])
  mem = -1
  call MPI_Win_fence(0, win)
  vals = [(myrank * 100 + i, i = 1, K)]
  call MPI_Put(vals, K, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, K, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  do i = 1, K
    call check(mem(i) == left * 100 + i, 'put between fences')
  end do
  got = -1
  call MPI_Get(got, K, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, K, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  do i = 1, K
    call check(got(i) == myrank * 100 + i, 'get between fences')
  end do
  mem = 0
  call MPI_Win_fence(MPI_MODE_NOSUCCEED, win)

  one = 1
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win)
  call MPI_Accumulate(one, 1, MPI_INTEGER, 0, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, MPI_SUM, win)
  call MPI_Fetch_and_op(one, old, MPI_INTEGER, 0, 1_MPI_ADDRESS_KIND, MPI_SUM, win)
  call MPI_Win_unlock(0, win)
  call check(old >= 0 .and. old < nprocs, 'fetch_and_op result in range')
  call MPI_Barrier(MPI_COMM_WORLD)
  if (myrank == 0) then
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win)
    call check(mem(1) == nprocs, 'accumulate from every rank')
    call check(mem(2) == nprocs, 'fetch_and_op from every rank')
    call MPI_Win_unlock(0, win)
  end if
  call MPI_Barrier(MPI_COMM_WORLD)

  call MPI_Win_lock_all(0, win)
  val = myrank + 1
  cmp = 0
  res = -1
  call MPI_Compare_and_swap(val, cmp, res, MPI_INTEGER, 0, 2_MPI_ADDRESS_KIND, win)
  call MPI_Win_flush(0, win)
  call MPI_Win_unlock_all(win)
  won = merge(1, 0, res == 0)
  call MPI_Allreduce(won, wins, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(wins == 1, 'exactly one compare_and_swap wins')

  local = myrank
  call MPI_Win_create(local, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win2)
  call MPI_Win_fence(0, win2)
  got = -1
  call MPI_Get(got, 1, MPI_INTEGER, right, 3_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win2)
  call MPI_Win_fence(0, win2)
  call check(got(1) == right, 'get from a window over a Fortran array')
  call MPI_Win_free(win2)
  call MPI_Win_free(win)
  call check_finish('f08_rma')
contains
  include 'fcheck.inc'
end program f08_rma
