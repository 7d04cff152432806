-- Bodies are stored packed: text, html and extracted_text in one deflate
-- stream (layout in store/body.go), about a fifth of their plain size.
-- New rows set packed and leave the three plain columns NULL; rows written
-- before keep their plain columns and packed NULL. Nullable, so adding it
-- checks no existing row.
ALTER TABLE bodies ADD COLUMN packed BLOB;
