! f90_file: MPI-IO through `use mpi`: every rank opens one shared file
! (a CHARACTER name with its hidden length), writes its block with
! MPI_File_write_at, reads its neighbour's block back after a barrier and
! MPI_File_sync, then MPI_File_close gives back MPI_FILE_NULL and rank 0
! deletes the file. Any size >= 1.
program f90_file
  use mpi
  implicit none
  integer, parameter :: K = 16
  integer :: nfail, myrank, nprocs, fh, ierr, i, right
  integer :: vals(K), got(K)
  integer(kind=MPI_OFFSET_KIND) :: off
  integer :: st(MPI_STATUS_SIZE)
  character(len=64) :: name

  nfail = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(myrank + 1, nprocs)
  name = 'f90_file.dat'
  call MPI_File_open(MPI_COMM_WORLD, trim(name), MPI_MODE_CREATE + MPI_MODE_RDWR,      &
                     MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS, 'file_open')
  vals = [(myrank * 1000 + i, i = 1, K)]
  off = int(myrank, MPI_OFFSET_KIND) * K * 4
  call MPI_File_write_at(fh, off, vals, K, MPI_INTEGER, st, ierr)
  call check(ierr == MPI_SUCCESS, 'write_at')
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  got = -1
  off = int(right, MPI_OFFSET_KIND) * K * 4
  call MPI_File_read_at(fh, off, got, K, MPI_INTEGER, st, ierr)
  call check(ierr == MPI_SUCCESS, 'read_at')
  do i = 1, K
    call check(got(i) == right * 1000 + i, 'the neighbour''s block')
  end do
  call MPI_File_close(fh, ierr)
  call check(ierr == MPI_SUCCESS, 'file_close')
  call check(fh == MPI_FILE_NULL, 'file_close gives MPI_FILE_NULL')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (myrank == 0) then
    call MPI_File_delete(trim(name), MPI_INFO_NULL, ierr)
    call check(ierr == MPI_SUCCESS, 'file_delete')
  end if
  call check_finish('f90_file')
contains
  include 'fcheck.inc'
end program f90_file
