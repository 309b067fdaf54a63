! f90_comm: communicators and the rest of the library through `use mpi`:
! splits, groups (MPI_GROUP_RANGE_INCL's ranges(3,*)), names (character
! arguments, trailing blanks), Cartesian topologies (LOGICAL periods in and
! out, MPI_DIMS_CREATE), a distributed graph with MPI_UNWEIGHTED and a
! neighbourhood collective, attributes (keyvals with Fortran copy and
! delete procedures, MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN, MPI_TAG_UB's
! value, MPI-1's MPI_ATTR_PUT/GET), an error handler written in Fortran,
! MPI_ERRORS_RETURN with MPI_ERROR_CLASS/STRING, info objects (keys and
! values with blanks, MPI_INFO_GET_STRING's lengths), a generalized request
! whose query, free and cancel procedures are Fortran, datatype envelopes
! and contents, packing, MPI_ALLOC_MEM, MPI-1's INTEGER datatype routines,
! environment queries. (The status conversions MPI_Status_f2f08/f082f are in
! f08_p2p: MPICH 4.0.2's module mpi lacks them.) Any size >= 1.
module f90_comm_calls
  ! counts of the calls MPI makes back into the program
  implicit none
  integer :: ncopy = 0, ndelete = 0, nerrh = 0, lasterr = 0, lastcomm = -1
  integer :: nquery = 0, nfree = 0, ncancel = 0
end module f90_comm_calls

program f90_comm
  use mpi
  use f90_comm_calls
  use, intrinsic :: iso_c_binding, only : c_f_pointer, c_null_ptr
  implicit none
  integer :: nfail, myrank, nprocs, ierr, rc, i, n, color
  integer :: half, world_group, sub_group, sub, cart, sub1, graph, dup, comm
  integer :: ranges(3, 1), ranks(2), tr(2), res, len, dims(2), coords(2)
  integer :: src, dst, keyval, keyval2, tkeyval, errh, info, info2, nkeys
  integer :: greq, status(MPI_STATUS_SIZE), vec, ne, na, nd, comb, ints(3), types(1)
  integer(kind=MPI_ADDRESS_KIND) :: val, addrs(1), lb, ext, base, a1, a2
  integer :: ival, provided, ver, sub2, dtype, ext4
  logical :: periods(2), flag, remain(2), weighted
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_ERROR_STRING) :: msg
  character(len=MPI_MAX_INFO_VAL) :: value
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  character(len=40) :: short
  character(len=100) :: packbuf
  integer :: pos, unpacked(3), indeg, outdeg, nbr(4), srcs(1), dsts(1)
  integer, pointer :: mem(:)
  double precision :: t0
  external :: count_copy, count_delete, on_error, gquery, gfree, gcancel

  nfail = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, myrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Initialized(flag, ierr)
  call check(flag, 'MPI_Initialized is .TRUE.')
  call MPI_Query_thread(provided, ierr)
  call check(provided >= MPI_THREAD_SINGLE, 'MPI_Query_thread')
  call MPI_Is_thread_main(flag, ierr)
  call check(flag, 'MPI_Is_thread_main')
  call MPI_Get_version(ver, i, ierr)
  call check(ver >= 3, 'MPI_Get_version')
  call MPI_Get_library_version(version, len, ierr)
  call check(len > 0 .and. len <= MPI_MAX_LIBRARY_VERSION_STRING, 'library version length')
  call check(version(len + 1:) == ' ', 'library version padded with blanks')
  t0 = MPI_Wtime()
  call check(MPI_Wtick() > 0 .and. t0 >= 0, 'MPI_Wtime, MPI_Wtick')
  a1 = 1000
  a2 = MPI_Aint_add(a1, 24_MPI_ADDRESS_KIND)
  call check(a2 == 1024 .and. MPI_Aint_diff(a2, a1) == 24, 'MPI_Aint_add, MPI_Aint_diff')

  ! splits and groups
  color = merge(0, 1, myrank < (nprocs + 1) / 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, -myrank, half, ierr)
  call MPI_Comm_size(half, n, ierr)
  call MPI_Comm_rank(half, i, ierr)
  call check(n == merge((nprocs + 1) / 2, nprocs / 2, color == 0), 'split size')
  call check(i == n - 1 - merge(myrank, myrank - (nprocs + 1) / 2, color == 0), &
             'split ordered by key')
  call MPI_Comm_split(MPI_COMM_WORLD, merge(MPI_UNDEFINED, 0, myrank == 0), 0, sub, ierr)
  if (myrank == 0) call check(sub == MPI_COMM_NULL, 'MPI_UNDEFINED gives MPI_COMM_NULL')
  if (sub /= MPI_COMM_NULL) call MPI_Comm_free(sub, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, world_group, ierr)
  ranges(:, 1) = [nprocs - 1, 0, -1]
  call MPI_Group_range_incl(world_group, 1, ranges, sub_group, ierr)
  call MPI_Group_size(sub_group, n, ierr)
  call check(n == nprocs, 'MPI_Group_range_incl size')
  ranks = [0, min(1, nprocs - 1)]
  call MPI_Group_translate_ranks(sub_group, 2, ranks, world_group, tr, ierr)
  call check(tr(1) == nprocs - 1 .and. tr(2) == max(nprocs - 2, 0), 'translate ranks')
  call MPI_Group_compare(world_group, sub_group, res, ierr)
  call check(res == merge(MPI_IDENT, MPI_SIMILAR, nprocs == 1), 'MPI_Group_compare')
  call MPI_Comm_create(MPI_COMM_WORLD, sub_group, sub, ierr)
  call MPI_Comm_rank(sub, i, ierr)
  call check(i == nprocs - 1 - myrank, 'MPI_Comm_create from a reversed group')
  call MPI_Comm_free(sub, ierr)
  call MPI_Group_free(sub_group, ierr)
  call MPI_Group_free(world_group, ierr)
  call check(world_group == MPI_GROUP_NULL, 'MPI_Group_free')

  ! names: trailing blanks do not count
  call MPI_Comm_set_name(half, 'half of the world   ', ierr)
  name = 'x'
  call MPI_Comm_get_name(half, name, len, ierr)
  call check(name == 'half of the world' .and. len == 17, 'comm name')
  call MPI_Comm_get_name(MPI_COMM_WORLD, short, len, ierr)
  call check(short(1:len) == 'MPI_COMM_WORLD', 'MPI_COMM_WORLD name')

  ! a Cartesian grid, periodic in one dimension only
  dims = 0
  call MPI_Dims_create(nprocs, 2, dims, ierr)
  call check(dims(1) * dims(2) == nprocs, 'MPI_Dims_create')
  periods = [.true., .false.]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  periods = [.false., .true.]
  call MPI_Cart_get(cart, 2, dims, periods, coords, ierr)
  call check(periods(1) .and. .not. periods(2), 'MPI_Cart_get periods (LOGICAL)')
  call MPI_Cart_coords(cart, myrank, 2, tr, ierr)
  call check(all(tr == coords), 'MPI_Cart_coords')
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  call check(src /= MPI_PROC_NULL .and. dst /= MPI_PROC_NULL, 'periodic shift')
  call MPI_Cart_shift(cart, 1, 1, src, dst, ierr)
  if (coords(2) == dims(2) - 1) call check(dst == MPI_PROC_NULL, 'shift off the edge')
  remain = [.false., .true.]
  call MPI_Cart_sub(cart, remain, sub1, ierr)
  call MPI_Comm_size(sub1, n, ierr)
  call check(n == dims(2), 'MPI_Cart_sub keeps dimension 2')
  call MPI_Topo_test(cart, res, ierr)
  call check(res == MPI_CART, 'MPI_Topo_test')
  call MPI_Comm_free(sub1, ierr)
  call MPI_Comm_free(cart, ierr)

  ! a ring as a distributed graph, unweighted; gather the left neighbour
  srcs(1) = mod(myrank - 1 + nprocs, nprocs)
  dsts(1) = mod(myrank + 1, nprocs)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., graph, ierr)
  call MPI_Dist_graph_neighbors_count(graph, indeg, outdeg, weighted, ierr)
  call check(indeg == 1 .and. outdeg == 1 .and. .not. weighted, 'unweighted graph')
  call MPI_Neighbor_allgather(myrank, 1, MPI_INTEGER, nbr, 1, MPI_INTEGER, graph, ierr)
  call check(nbr(1) == srcs(1), 'MPI_Neighbor_allgather')
  call MPI_Comm_free(graph, ierr)

  ! attributes: copy and delete procedures in Fortran, predefined ones
  call MPI_Comm_create_keyval(count_copy, count_delete, keyval, 1000_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, keyval2, &
                              0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(half, keyval, 41_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(half, keyval2, 99_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(half, dup, ierr)
  call check(ncopy == 1, 'the Fortran copy procedure ran')
  call MPI_Comm_get_attr(dup, keyval, val, flag, ierr)
  call check(flag .and. val == 42, 'copied attribute (copy procedure adds 1)')
  call MPI_Comm_get_attr(dup, keyval2, val, flag, ierr)
  call check(.not. flag, 'MPI_COMM_NULL_COPY_FN copies nothing')
  call MPI_Comm_free(dup, ierr)
  call check(ndelete == 1, 'the Fortran delete procedure ran on free')
  call MPI_Comm_delete_attr(half, keyval, ierr)
  call check(ndelete == 2, 'and on MPI_Comm_delete_attr')
  call MPI_Comm_free_keyval(keyval, ierr)
  call MPI_Comm_free_keyval(keyval2, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, keyval, &
                              0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(half, keyval, -5_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(half, dup, ierr)
  call MPI_Comm_get_attr(dup, keyval, val, flag, ierr)
  call check(flag .and. val == -5, 'MPI_COMM_DUP_FN copies the value')
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free_keyval(keyval, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  call check(flag .and. val >= 32767, 'MPI_TAG_UB is a value, not an address')
  call MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, keyval, 0, ierr)
  call MPI_Attr_put(half, keyval, 17, ierr)
  call MPI_Attr_get(half, keyval, ival, flag, ierr)
  call check(flag .and. ival == 17, 'MPI-1 MPI_Attr_put/get')
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
  call check(flag .and. ival >= 32767, 'MPI-1 MPI_Attr_get of MPI_TAG_UB')
  call MPI_Attr_delete(half, keyval, ierr)
  call MPI_Keyval_free(keyval, ierr)
  call check(keyval == MPI_KEYVAL_INVALID, 'MPI_Keyval_free')
  call MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, tkeyval, &
                              0_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_contiguous(2, MPI_INTEGER, vec, ierr)
  call MPI_Type_set_attr(vec, tkeyval, 7_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_dup(vec, dtype, ierr)
  call MPI_Type_get_attr(dtype, tkeyval, val, flag, ierr)
  call check(flag .and. val == 7, 'datatype attribute copied by MPI_TYPE_DUP_FN')
  call MPI_Type_set_name(dtype, 'pair', ierr)
  call MPI_Type_get_name(dtype, name, len, ierr)
  call check(name(1:len) == 'pair', 'datatype name')
  call MPI_Type_free(dtype, ierr)
  call MPI_Type_free(vec, ierr)
  call MPI_Type_free_keyval(tkeyval, ierr)

  ! errors: a Fortran handler, then MPI_ERRORS_RETURN
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Comm_create_errhandler(on_error, errh, ierr)
  call MPI_Comm_set_errhandler(comm, errh, ierr)
  call MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER, ierr)
  call check(nerrh == 1 .and. lasterr == MPI_ERR_OTHER, 'the Fortran error handler ran')
  call check(lastcomm == comm, 'it got the communicator''s integer')
  call MPI_Errhandler_free(errh, ierr)
  call MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(ival, 1, MPI_INTEGER, nprocs, 0, comm, ierr)
  call check(ierr /= MPI_SUCCESS, 'a send to rank size fails')
  rc = ierr
  call MPI_Error_class(rc, res, ierr)
  call check(res == MPI_ERR_RANK, 'MPI_ERR_RANK')
  call MPI_Error_string(MPI_ERR_RANK, msg, len, ierr)
  call check(len > 0 .and. msg(len + 1:) == ' ', 'MPI_Error_string')
  call MPI_Errhandler_set(comm, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Errhandler_get(comm, errh, ierr)
  call check(errh == MPI_ERRORS_ARE_FATAL, 'MPI-1 MPI_Errhandler_set/get')
  call MPI_Comm_free(comm, ierr)

  ! info: leading and trailing blanks of keys and values are stripped
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, '  colour ', ' deep blue  ', ierr)
  call MPI_Info_set(info, 'size', '12', ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  call check(nkeys == 2, 'MPI_Info_get_nkeys')
  call MPI_Info_get_nthkey(info, 0, short, ierr)
  call check(short == 'colour', 'MPI_Info_get_nthkey')
  call MPI_Info_get(info, 'colour', MPI_MAX_INFO_VAL, value, flag, ierr)
  call check(flag .and. value == 'deep blue', 'MPI_Info_get')
  call MPI_Info_get_valuelen(info, 'colour', len, flag, ierr)
  call check(flag .and. len == 9, 'MPI_Info_get_valuelen')
  len = 4
  short = 'untouched'
  call MPI_Info_get_string(info, 'colour', len, short, flag, ierr)
  call check(flag .and. len == 9 .and. short == 'deep', 'MPI_Info_get_string truncates')
  call MPI_Info_get(info, 'nosuchkey', 10, value, flag, ierr)
  call check(.not. flag, 'MPI_Info_get of a missing key')
  call MPI_Info_dup(info, info2, ierr)
  call MPI_Info_delete(info2, 'size', ierr)
  call MPI_Info_get_nkeys(info2, nkeys, ierr)
  call check(nkeys == 1, 'MPI_Info_delete in the copy')
  call MPI_Info_free(info2, ierr)
  call MPI_Info_free(info, ierr)
  call check(info == MPI_INFO_NULL, 'MPI_Info_free')

  ! a generalized request with Fortran procedures
  call MPI_Grequest_start(gquery, gfree, gcancel, 77_MPI_ADDRESS_KIND, greq, ierr)
  call MPI_Grequest_complete(greq, ierr)
  call MPI_Wait(greq, status, ierr)
  call check(nquery == 1 .and. nfree == 1, 'query and free procedures ran')
  call check(status(MPI_SOURCE) == 77 .and. status(MPI_TAG) == 78, 'status set by the query')
  call MPI_Grequest_start(gquery, gfree, gcancel, 5_MPI_ADDRESS_KIND, greq, ierr)
  call MPI_Cancel(greq, ierr)
  call check(ncancel == 1, 'cancel procedure ran')
  call MPI_Grequest_complete(greq, ierr)
  call MPI_Wait(greq, status, ierr)
  call MPI_Test_cancelled(status, flag, ierr)
  call check(flag, 'the query marked it cancelled')

  ! a datatype's envelope and contents
  call MPI_Type_vector(3, 2, 5, MPI_INTEGER, vec, ierr)
  call MPI_Type_get_envelope(vec, ne, na, nd, comb, ierr)
  call check(ne == 3 .and. na == 0 .and. nd == 1 .and. comb == MPI_COMBINER_VECTOR, &
             'MPI_Type_get_envelope')
  call MPI_Type_get_contents(vec, 3, 0, 1, ints, addrs, types, ierr)
  call check(all(ints == [3, 2, 5]) .and. types(1) == MPI_INTEGER, 'MPI_Type_get_contents')
  call MPI_Type_get_extent(vec, lb, ext, ierr)
  call check(lb == 0 .and. ext == 4 * 12, 'MPI_Type_get_extent')
  call MPI_Type_extent(vec, ext4, ierr)
  call check(ext4 == 48, 'MPI-1 MPI_Type_extent (INTEGER)')
  call MPI_Type_hvector(2, 1, 8, MPI_INTEGER, dtype, ierr)
  call MPI_Type_extent(dtype, ext4, ierr)
  call check(ext4 == 12, 'MPI-1 MPI_Type_hvector with an INTEGER stride')
  call MPI_Type_free(dtype, ierr)
  call MPI_Type_free(vec, ierr)
  call MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, dtype, ierr)
  call MPI_Type_size(dtype, n, ierr)
  call check(n == 8, 'MPI_Type_match_size')

  ! packing: the position goes in and comes back
  pos = 0
  call MPI_Pack([1, 2, 3], 3, MPI_INTEGER, packbuf, 100, pos, MPI_COMM_SELF, ierr)
  call check(pos == 12, 'MPI_Pack position')
  sub2 = pos
  pos = 0
  call MPI_Unpack(packbuf, sub2, pos, unpacked, 3, MPI_INTEGER, MPI_COMM_SELF, ierr)
  call check(all(unpacked == [1, 2, 3]) .and. pos == 12, 'MPI_Unpack')
  pos = 0
  a1 = 0
  call MPI_Pack_external('external32', [7, 8, 9], 3, MPI_INTEGER, packbuf, &
                         100_MPI_ADDRESS_KIND, a1, ierr)
  call check(a1 == 12 .and. ichar(packbuf(4:4)) == 7, 'MPI_Pack_external is big-endian')

  ! memory from MPI, used as an array (the address comes as an integer)
  call MPI_Alloc_mem(64_MPI_ADDRESS_KIND, MPI_INFO_NULL, base, ierr)
  call check(base /= 0, 'MPI_Alloc_mem')
  call c_f_pointer(transfer(base, c_null_ptr), mem, [16])
  mem = [(i, i = 1, 16)]
  call check(sum(mem) == 136, 'the memory is usable')
  call MPI_Free_mem(mem, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Free_mem')

  call MPI_Comm_free(half, ierr)
  call check_finish('f90_comm')
contains
  include 'fcheck.inc'
end program f90_comm

subroutine count_copy(oldcomm, keyval, extra, valin, valout, flag, ierror)
  use mpi
  use f90_comm_calls
  implicit none
  integer :: oldcomm, keyval, ierror
  integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
  logical :: flag
  ncopy = ncopy + 1
  valout = valin + 1
  flag = extra == 1000
  ierror = MPI_SUCCESS
end subroutine count_copy

subroutine count_delete(comm, keyval, val, extra, ierror)
  use mpi
  use f90_comm_calls
  implicit none
  integer :: comm, keyval, ierror
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  if (extra == 1000) ndelete = ndelete + 1
  ierror = MPI_SUCCESS
end subroutine count_delete

subroutine on_error(comm, code)
  use f90_comm_calls
  implicit none
  integer :: comm, code
  nerrh = nerrh + 1
  lasterr = code
  lastcomm = comm
end subroutine on_error

subroutine gquery(extra, status, ierror)
  use mpi
  use f90_comm_calls
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: status(MPI_STATUS_SIZE), ierror
  nquery = nquery + 1
  status(MPI_SOURCE) = int(extra)
  status(MPI_TAG) = int(extra) + 1
  call MPI_Status_set_cancelled(status, extra == 5, ierror)
end subroutine gquery

subroutine gfree(extra, ierror)
  use f90_comm_calls
  implicit none
  integer(kind=8) :: extra
  integer :: ierror
  nfree = nfree + 1
  ierror = 0
end subroutine gfree

subroutine gcancel(extra, complete, ierror)
  use f90_comm_calls
  implicit none
  integer(kind=8) :: extra
  logical :: complete
  integer :: ierror
  if (.not. complete) ncancel = ncancel + 1
  ierror = 0
end subroutine gcancel
