-- An upload's original rows in compressed blocks instead of one jsonb row each (files/row-block.ts,
-- docs/storage.md): a row per database row cost ~4 bytes per cell plus ~100 bytes per row, so a
-- small workbook of repeated strings stored 1,481 times its size. `stored_bytes` is what an
-- upload's blocks take, counted against its user's storage budget.
create table upload_row_blocks (
  upload_id   uuid not null references uploads (id),
  first_index integer not null,
  row_count   integer not null check (row_count > 0),
  encoding    text not null check (encoding in ('deflate', 'json')),
  data        bytea not null,
  primary key (upload_id, first_index)
);

alter table uploads add column stored_bytes bigint not null default 0;

-- Rows stored before this migration become uncompressed blocks of up to 1,000 rows (row indexes
-- of an upload are 0, 1, 2, … without gaps, so a block's rows are first_index onwards).
insert into upload_row_blocks (upload_id, first_index, row_count, encoding, data)
select upload_id, min(row_index), count(*), 'json',
       convert_to(json_build_object('cells', json_agg(cells order by row_index),
                                    'emails', json_agg(email order by row_index))::text, 'UTF8')
  from upload_rows
 group by upload_id, row_index / 1000;

update uploads u
   set stored_bytes = coalesce((select sum(octet_length(b.data)) from upload_row_blocks b where b.upload_id = u.id), 0);

drop table upload_rows;
