# bash completion for esa-jobs(1)
_esa_jobs()
{
	local cur prev words cword
	_init_completion || return
	case $prev in
	-t|--dtype) COMPREPLY=($(compgen -W 'f32 i32' -- "$cur")); return ;;
	--metrics-file) _filedir; return ;;
	-s|--switch|--values|-n|--elems|-i|--iters|--seed|--only|--linger) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--switch --values --elems --iters --dtype --seed --only
			--linger --metrics-file --progress --json --quiet --verbose --version
			--help' -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -W 'job worker ps= netns= switch= window= priority= prio=
		prio_max= timeout_ms= give_up_ms= float_block= run= io= elems= iters=
		dtype=' -- "$cur"))
	[[ ${COMPREPLY[*]} == *= ]] && compopt -o nospace
}
complete -F _esa_jobs esa-jobs
