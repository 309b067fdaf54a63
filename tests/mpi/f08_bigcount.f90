! f08_bigcount: mpi_f08's large-count forms (INTEGER(KIND=MPI_COUNT_KIND) arguments)
! with values beyond the default integer's range, and little data, so it runs in the
! ordinary suite: MPI_Type_contiguous of 3e9 bytes (MPI_Type_size says 3e9 through the
! large form), MPI_Type_vector(2, 4, 3000000001) over a 3 GB array of which only 8
! bytes are ever touched, sent to a far rank (another site in a 2-site run) and
! received there as the same type, every byte and the bytes around checked, and
! MPI_Get_count with a large count. Any size >= 1.
program f08_bigcount
  use mpi_f08
  implicit none
  integer :: nfail, myrank, nprocs, to, from, k
  integer(kind=MPI_COUNT_KIND) :: sz, lb, ext, got
  integer(kind=MPI_COUNT_KIND), parameter :: g = 3000000000_MPI_COUNT_KIND
  integer(kind=MPI_COUNT_KIND), parameter :: stride = 3000000001_MPI_COUNT_KIND
  integer(kind=MPI_COUNT_KIND) :: at(8)
  integer(kind=1), allocatable :: sb(:), rb(:)
  type(MPI_Datatype) :: big, vec
  type(MPI_Status) :: status

  nfail = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  to = mod(myrank + nprocs / 2, nprocs)
  from = mod(myrank - nprocs / 2 + nprocs, nprocs)

  call MPI_Type_contiguous(g, MPI_BYTE, big)
  call MPI_Type_commit(big)
  call MPI_Type_size(big, sz)
  call MPI_Type_get_extent(big, lb, ext)
  call check(sz == g .and. ext == g .and. lb == 0, 'contiguous of 3e9: size and extent')
  call MPI_Type_free(big)

  call MPI_Type_vector(2_MPI_COUNT_KIND, 4_MPI_COUNT_KIND, stride, MPI_BYTE, vec)
  call MPI_Type_commit(vec)
  call MPI_Type_size(vec, sz)
  call MPI_Type_get_extent(vec, lb, ext)
  call check(sz == 8 .and. ext == stride + 4, 'vector(2, 4, 3000000001): size and extent')
  ! the array's element i is byte i - 1 of the type; only the data's pages are touched
  allocate (sb(stride + 6), rb(stride + 6))
  do k = 1, 4
    at(k) = k
    at(k + 4) = stride + k
  end do
  do k = 1, 8
    sb(at(k)) = int(10 * myrank + k, kind=1)
    rb(at(k)) = 0
  end do
  rb(stride + 5) = 99
  call MPI_Sendrecv(sb, 1_MPI_COUNT_KIND, vec, to, 3, rb, 1_MPI_COUNT_KIND, vec, from, 3, &
                    MPI_COMM_WORLD, status)
  do k = 1, 8
    call check(rb(at(k)) == int(10 * from + k, kind=1), 'a byte of the vector element')
  end do
  call check(rb(stride + 5) == 99, 'nothing written after the element')
  call MPI_Get_count(status, vec, got)
  call check(got == 1, 'MPI_Get_count with a large count')
  deallocate (sb, rb)
  call MPI_Type_free(vec)
  call check_finish('f08_bigcount')
contains
  include 'fcheck.inc'
end program f08_bigcount
